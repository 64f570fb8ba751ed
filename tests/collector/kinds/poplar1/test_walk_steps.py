"""One step of the walk on both aggregators at once (``walk.both``): the helper's in the background, both results
returned, and when either fails its error, never a step left running; and how the leader cuts a level into the
helper's chunks (``levels.Chunking``)."""

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from collector.kinds.poplar1.levels import Chunking
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


def test_a_level_is_cut_into_chunks_of_at_most_so_many_reports_and_bytes():
    body = {"campaign": "top", "fingerprint": "f" * 64, "batch": "2026-12-02", "level": 3,
            "prefixes": ["0000", "0001", "0010"]}
    entries = [{"report_id": f"{i:032x}", "public_share": "p" * (100 + i % 7)} for i in range(23)]
    by_work = Chunking(evaluations=16).split(body, entries)  # 3 prefixes: 5 reports a chunk
    assert [len(chunk) for chunk in by_work] == [5, 5, 5, 5, 3] and sum(by_work, []) == entries
    assert Chunking(evaluations=2).split(body, entries[:2]) == [entries[:1], entries[1:2]]  # at least one report
    limit = 1000
    by_bytes = Chunking(evaluations=10_000, body_bytes=limit).split(body, entries)
    assert len(by_bytes) > 1 and sum(by_bytes, []) == entries
    for position, chunk in enumerate(by_bytes):  # each request as the leader sends it stays within the limit
        sent = {**body, "chunk": position, "chunks": len(by_bytes), "reports": chunk}
        assert len(json.dumps(sent)) <= limit
        if position + 1 < len(by_bytes):  # and a chunk is cut only where the next report would not fit
            grown = {**sent, "reports": chunk + by_bytes[position + 1][:1]}
            assert len(json.dumps(grown)) > limit - 16
    with pytest.raises(ValueError, match="POPLAR1_CHUNK_EVALUATIONS"):
        Chunking(evaluations=0)
