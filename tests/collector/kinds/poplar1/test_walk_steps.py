"""One step of the walk on both aggregators at once (``walk.both``): the helper's in the background, both results
returned, and when either fails its error, never a step left running."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from collector.kinds.poplar1.walk import both


def test_both_steps_run_at_once_and_return_their_results():
    started = threading.Barrier(2, timeout=30)  # each step waits for the other: only concurrent steps pass

    def step(value):
        started.wait()
        return value

    with ThreadPoolExecutor(max_workers=1) as background:
        assert both(background, lambda: step("helper"), lambda: step("leader")) == ("leader", "helper")


def test_the_leaders_error_is_raised_once_the_helpers_request_is_over():
    finished = threading.Event()

    def helper_step():
        finished.wait(timeout=0.2)
        finished.set()
        return "answer"

    def leader_step():
        raise ValueError("refused by the leader's own records")

    with ThreadPoolExecutor(max_workers=1) as background, pytest.raises(ValueError, match="leader"):
        both(background, helper_step, leader_step)
    assert finished.is_set()


def test_the_helpers_error_is_raised_after_the_leaders_step():
    def helper_step():
        raise RuntimeError("the helper refused")

    with ThreadPoolExecutor(max_workers=1) as background, pytest.raises(RuntimeError, match="helper refused"):
        both(background, helper_step, lambda: "prepared")
