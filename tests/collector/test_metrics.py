"""Metrics across processes: prometheus_client's multiprocess mode, with ``serve`` and with plain gunicorn."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from collector.storage import Storage

from .helpers import free_port, stop, wait_ready

COUNT_IN_A_PROCESS = """
import sys
from collector.metrics import Metrics
Metrics().count_reports(5, 1, 2)
"""
EXPOSE = """
from collector.metrics import Metrics
print(Metrics().exposition())
"""


def _run(script: str, directory: Path) -> str:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    return subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True,
                          text=True).stdout


def _value(text: str, series: str) -> float:
    match = re.search("^" + re.escape(series) + r" (\S+)$", text, re.M)
    assert match, text
    return float(match.group(1))


def test_counters_of_processes_that_exited_add_up(tmp_path):
    directory = tmp_path / "metrics"
    directory.mkdir()
    for _ in range(3):
        _run(COUNT_IN_A_PROCESS, directory)
    text = _run(EXPOSE, directory)
    assert _value(text, 'ldp_reports_total{outcome="accepted"}') == 15
    assert _value(text, 'ldp_reports_total{outcome="rejected"}') == 6
    assert _value(text, 'ldp_http_requests_total{endpoint="reports",status="5xx"}') == 0


def test_plain_gunicorn_workers_share_their_counters(tmp_path):
    "``gunicorn 'collector.app:create_app()'`` without PROMETHEUS_MULTIPROC_DIR: totals, not one worker's count"
    db_path, port = tmp_path / "collector.db", free_port()
    with Storage(db_path) as storage:
        storage.migrate()
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env.update(LDP_DATABASE=str(db_path), PYTHONWARNINGS="")
    url = f"http://127.0.0.1:{port}"
    with open(tmp_path / "gunicorn.log", "wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "gunicorn", "--workers", "2", "--bind", f"127.0.0.1:{port}",
                                    "collector.app:create_app()"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    try:
        wait_ready(url, process)

        def livez() -> None:
            urllib.request.urlopen(url + "/livez", timeout=10).close()

        def health_count() -> float:
            with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
                return _value(response.read().decode(), 'ldp_http_requests_total{endpoint="health",status="2xx"}')

        with ThreadPoolExecutor(8) as pool:  # concurrent requests: both workers serve some
            list(pool.map(lambda _: livez(), range(40)))
            counts = list(pool.map(lambda _: health_count(), range(16)))
        assert min(counts) >= 41  # whichever worker answers counts every worker's /livez (and wait_ready's /readyz)
        with ThreadPoolExecutor(1) as pool:
            sequential = list(pool.map(lambda _: health_count(), range(4)))
        assert sequential == [sequential[0] + i for i in range(4)]  # never down: each read counts the previous
    finally:
        stop(process)
        shutil.rmtree(Path(tempfile.gettempdir()) / f"ldp-metrics-{os.getuid()}-gunicorn-{process.pid}",
                      ignore_errors=True)


def test_a_stale_directory_removed_by_another_starting_process_is_skipped(tmp_path, monkeypatch):
    """Two servers starting at once both sweep the stale metrics directories: the one that finds a directory gone
    between listing and checking it goes on (seen as a FileNotFoundError from stat() under load)"""
    from collector import metrics

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    stale = tmp_path / f"ldp-metrics-{os.getuid()}-test-999999999"
    stale.mkdir()

    def dead_and_swept_by_the_other(pid: int) -> bool:
        shutil.rmtree(stale)  # the other process removes it first
        return False

    monkeypatch.setattr(metrics, "_alive", dead_and_swept_by_the_other)
    directory = metrics.process_directory("test", 12345)
    assert directory == tmp_path / f"ldp-metrics-{os.getuid()}-test-12345" and directory.is_dir()
    assert not stale.exists()


def test_a_file_another_process_is_creating_is_read_as_holding_nothing_yet(tmp_path):
    """prometheus_client creates a process's file empty and sizes it a moment later; ``/metrics`` read while a
    worker starts met the empty file (``struct.error``, a 500 under load). The empty file holds no value yet."""
    _run(COUNT_IN_A_PROCESS, tmp_path)
    (tmp_path / "counter_999999999.db").touch()  # a starting worker, between its open() and its truncate()
    text = _run(EXPOSE, tmp_path)
    assert _value(text, 'ldp_reports_total{outcome="accepted"}') == 5


def test_an_app_in_a_process_that_only_imported_gunicorn_makes_no_directory(tmp_path, monkeypatch):
    """A test run (or a script) imports gunicorn through ``collector.server`` and creates apps without a master:
    metrics stay in the process, instead of a directory named after the process's parent that nothing removes"""
    import gunicorn.arbiter  # noqa: F401

    from collector.metrics import default_directory

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    monkeypatch.delenv("SERVER_SOFTWARE", raising=False)
    assert default_directory() is None
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("SERVER_SOFTWARE", gunicorn.SERVER_SOFTWARE)  # what a master exports before loading the app
    assert default_directory() == str(tmp_path / f"ldp-metrics-{os.getuid()}-gunicorn-{os.getppid()}")
