"""The demo's two phases at once (issue 14 item 5): the distributed campaign's leader and helper start, seal and
upload beside the local collector and its devices.  A failure of either phase fails the demo with that phase's
message and stops the other one at its next step; every collector child and device process ends; Ctrl-C ends
the demo with nothing left running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

import demo.devices as devices
import demo.distributed as distributed
import demo.run as run
from demo.scenario import CAMPAIGNS

ROOT = Path(__file__).resolve().parents[2]
LOCAL = [c for c in CAMPAIGNS if c.name == "analytics_opt_in"]
WAIT = 120  # seconds a step may take on a loaded machine before the test gives up on it (a hang, not a timing)


class Bar:
    "A progress bar that counts; its first update waits (in the thread that calls it) for ``hold``, if given"

    def __init__(self, hold: threading.Event | None = None) -> None:
        self.count, self.calls, self.hold = 0, 0, hold
        self.first = threading.Event()

    def update(self, count: int) -> None:
        self.calls += 1
        if self.calls == 1:
            self.first.set()
            if self.hold is not None:
                assert self.hold.wait(WAIT), "the other phase never stopped this one"
        self.count += count


class Recorder:
    "The bars the demo opened (total, label, bar)"

    def __init__(self, hold: threading.Event | None = None) -> None:
        self.bars: list[tuple[int, str, Bar]] = []
        self.hold = hold

    @contextmanager
    def __call__(self, total: int, label: str):
        bar = Bar(self.hold)
        self.bars.append((total, label, bar))
        yield bar


@pytest.fixture
def children(monkeypatch):
    "Every child process the demo starts (the collectors and the device workers)"
    started: list[subprocess.Popen] = []

    class Recorded(subprocess.Popen):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(subprocess, "Popen", Recorded)
    return started


@pytest.fixture
def stop_event(monkeypatch):
    "The demo's stop event (handed to the distributed phase's thread), once the demo has made it"
    made = threading.Event()
    box: list[threading.Event] = []

    class Captured(run.Background):
        def __init__(self, target, stop, name):
            box.append(stop)
            made.set()
            super().__init__(target, stop, name)

    monkeypatch.setattr(run, "Background", Captured)

    class Stopped(threading.Event):  # set once the demo's stop is: a bar's first update may wait for it
        def wait(self, timeout=None):
            return made.wait(timeout) and box[0].wait(timeout)

    return Stopped()


def assert_all_ended(children):
    assert children, "the demo started no child process"
    assert all(child.poll() is not None for child in children), [child.args[:2] for child in children]
    assert not [t for t in threading.enumerate() if t.name.startswith("ldp-demo-distributed")]


def test_a_failing_distributed_phase_fails_the_demo_and_stops_the_devices(tmp_path, monkeypatch, children,
                                                                          stop_event):
    "The local devices stop at their next user (one was counted when the sealing failed) and every child ends"
    progress = Recorder(hold=stop_event)

    def failing(url, ingest_key, created, population, progress_=None, **options):
        assert progress.bars and progress.bars[0][2].first.wait(WAIT)  # a local user has reported
        raise RuntimeError("sealing broke")

    monkeypatch.setattr(distributed, "report_distributed", failing)
    with pytest.raises(RuntimeError, match="sealing broke"):
        run.run_demo(200, tmp_path / "out", seed=1, campaigns=LOCAL, progress=progress)
    [(total, label, bar)] = progress.bars
    assert total == 200 * 2 and "distributed" in label
    assert bar.count == 1  # the first local user only: the next one found the demo stopping
    assert_all_ended(children)
    assert not (tmp_path / "out" / "summary.json").exists()


def test_failing_devices_fail_the_demo_and_stop_the_sealing(tmp_path, monkeypatch, children, stop_event):
    "The distributed phase stops after the batch being posted when the devices failed; nothing is collected"
    progress = Recorder(hold=stop_event)
    collected = []
    monkeypatch.setattr(devices, "DISTRIBUTED_BATCH", 10)
    monkeypatch.setattr(distributed, "collect_today", lambda *args: collected.append(args) or {})

    def failing(url, ingest_key, population, state_root, progress_=None):
        assert progress.bars and progress.bars[0][2].first.wait(WAIT)  # a batch of sealed reports is posted
        raise RuntimeError("a device broke")

    monkeypatch.setattr(run, "report_through_sdk", failing)
    with pytest.raises(RuntimeError, match="a device broke"):
        run.run_demo(200, tmp_path / "out", seed=1, campaigns=LOCAL, progress=progress)
    [(total, _label, bar)] = progress.bars
    assert bar.count == 10 and not collected  # one batch of 20
    assert_all_ended(children)


def test_a_local_collector_that_does_not_start_stops_the_leader_and_helper(tmp_path, monkeypatch, children):
    real = run.running_collector

    asked: list[dict] = []

    @contextmanager
    def broken(database, config=None, **options):
        if config:  # the helper and the leader start as usual
            with real(database, config, **options) as url:
                yield url
            return
        asked.append(options)
        raise RuntimeError("the demo collector did not start: test")
        yield

    monkeypatch.setattr(run, "running_collector", broken)
    with pytest.raises(RuntimeError, match="did not start: test"):
        run.run_demo(30, tmp_path / "out", seed=1, campaigns=LOCAL)
    assert_all_ended(children)
    assert asked == [{"workers": run.LOCAL_COLLECTOR_WORKERS}]  # the local collector: one worker per device process


@pytest.mark.parametrize("group", [True, False], ids=["terminal", "main-process-only"])
def test_ctrl_c_during_the_devices_phase_ends_the_demo_and_every_child(tmp_path, group):
    "SIGINT to the terminal's process group (Ctrl-C), or to the demo's process alone: it ends, nothing is left"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    demo = subprocess.Popen([sys.executable, "-c", "from ldp_telemetry.cli import main; main()", "demo",
                             "--users", "2000", "--out", str(tmp_path / "out"), "--seed", "1"],
                            env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert demo.stderr is not None
        lines = []
        for line in demo.stderr:  # the bar's label is printed once the devices start
            lines.append(line)
            if "users reporting" in line:
                break
        else:
            pytest.fail("".join(lines))
        time.sleep(1)  # a few users in
        (os.killpg if group else os.kill)(demo.pid, signal.SIGINT)
        _out, err = demo.communicate(timeout=WAIT)
        assert demo.returncode != 0 and "Aborted" in err, err
        deadline = time.monotonic() + 30  # the group's last processes (gunicorn's workers) may take a moment
        while time.monotonic() < deadline and _group_alive(demo.pid):
            time.sleep(0.2)
        assert not _group_alive(demo.pid)
    finally:
        if _group_alive(demo.pid):
            os.killpg(demo.pid, signal.SIGKILL)
        demo.wait()


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True
