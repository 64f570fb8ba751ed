"""Prometheus metrics of the collector, correct across gunicorn workers: prometheus_client's multiprocess mode.

With a metrics directory (``PROMETHEUS_MULTIPROC_DIR``, the ``METRICS_DIR`` setting, or the default below) every
process writes its counters to its own memory-mapped files in it and ``/metrics`` merges every file, so any
worker answers for the whole service, and counters of workers that exited keep counting (they never go down).
The directory must be the same for every worker and should be emptied when the service starts:
``ldp-telemetry serve`` creates a fresh one and removes it when the master stops.

Plain ``gunicorn 'collector.app:create_app()'`` without the variable (run by a gunicorn master, not merely with
gunicorn imported) still gets one directory shared by the workers of one master:
``<tmp>/ldp-metrics-<uid>-gunicorn-<master pid>`` (directories of masters that no longer run are removed).
Outside gunicorn without a directory, metrics live in the process.

prometheus_client picks its storage when it is imported, from the environment, so this module imports it only
once the directory is known (:func:`use_directory`).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ENDPOINTS = ("reports", "campaigns", "estimate", "health", "other")
STATUS_CLASSES = ("2xx", "4xx", "5xx")
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
REPORT_OUTCOMES = ("accepted", "duplicate", "rejected")
ENV = "PROMETHEUS_MULTIPROC_DIR"


def default_directory() -> str | None:
    "``PROMETHEUS_MULTIPROC_DIR``, else under gunicorn a directory per master process, else None"
    if os.environ.get(ENV):
        return os.environ[ENV]
    if not _under_gunicorn():
        return None
    # the app is loaded in each worker, whose parent is the master (with --preload workers inherit the variable)
    return str(process_directory("gunicorn", os.getppid()))


def _under_gunicorn() -> bool:
    """Whether a gunicorn master runs this process or is its parent: its ``Arbiter`` exports ``SERVER_SOFTWARE``
    before it loads the app (workers inherit it).  Importing gunicorn is not enough: a process that only imported
    it (a test run, a script) made a directory named after its own parent, which nothing removed."""
    arbiter = sys.modules.get("gunicorn.arbiter")
    return arbiter is not None and os.environ.get("SERVER_SOFTWARE") == getattr(arbiter, "SERVER_SOFTWARE", None)


def process_directory(kind: str, pid: int) -> Path:
    """``<tmp>/ldp-metrics-<uid>-<kind>-<pid>``, created empty if missing; directories of the same kind whose
    process no longer runs (a master that was SIGKILLed could not clean up) are removed"""
    prefix = f"ldp-metrics-{os.getuid()}-{kind}-"
    root = Path(tempfile.gettempdir())
    for stale in root.glob(prefix + "*"):
        other = stale.name[len(prefix):]
        if other.isdigit() and int(other) != pid and not _alive(int(other)) and _owned(stale):
            shutil.rmtree(stale, ignore_errors=True)
    directory = root / f"{prefix}{pid}"
    directory.mkdir(mode=0o700, exist_ok=True)
    return directory


def _owned(path: Path) -> bool:
    "Whether ``path`` belongs to this user; False once gone (another process starting beside us removed it first)"
    try:
        return path.stat().st_uid == os.getuid()
    except FileNotFoundError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def use_directory(directory: str | None) -> None:
    "Export the metrics directory for prometheus_client; must run before the first Metrics is created"
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        os.environ[ENV] = str(directory)
    # imported once PROMETHEUS_MULTIPROC_DIR is set: prometheus_client picks its value class at import
    from prometheus_client import values

    wanted = bool(os.environ.get(ENV))
    if getattr(values.ValueClass, "_multiprocess", False) != wanted:
        values.ValueClass = values.get_value_class()  # imported before the directory was known: choose again


class Metrics:
    "The collector's counters and latency histogram, and their Prometheus exposition"

    def __init__(self, directory: str | Path | None = None) -> None:
        use_directory(str(directory) if directory else None)
        # after use_directory: prometheus_client picks its value class at import
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.directory = os.environ.get(ENV) or None
        self.registry = CollectorRegistry(auto_describe=True)
        self.reports = Counter("ldp_reports", "Reports received by outcome.", ["outcome"], registry=self.registry)
        self.requests = Counter("ldp_http_requests", "HTTP requests by endpoint and status class.",
                                ["endpoint", "status"], registry=self.registry)
        self.latency = Histogram("ldp_http_request_duration_seconds", "Request latency.", ["endpoint"],
                                 buckets=LATENCY_BUCKETS, registry=self.registry)
        # Every series exists from the start, at 0, and is looked up by its labels here once, not on every request
        self._reports = {outcome: self.reports.labels(outcome) for outcome in REPORT_OUTCOMES}
        self._requests = {(e, s): self.requests.labels(e, s) for e in ENDPOINTS for s in STATUS_CLASSES}
        self._latency = {endpoint: self.latency.labels(endpoint) for endpoint in ENDPOINTS}

    def count_reports(self, accepted: int, duplicate: int, rejected: int) -> None:
        for outcome, amount in zip(REPORT_OUTCOMES, (accepted, duplicate, rejected)):
            if amount:
                self._reports[outcome].inc(amount)

    def observe_request(self, endpoint: str, status: int, seconds: float) -> None:
        endpoint = endpoint if endpoint in ENDPOINTS else "other"
        status_class = STATUS_CLASSES[min(max(status // 100 - 3, 0), 2)] if status >= 400 else "2xx"
        self._requests[(endpoint, status_class)].inc()
        self._latency[endpoint].observe(seconds)

    def exposition(self) -> str:
        "Prometheus text format 0.0.4 of every process's counters (or of this process's without a directory)"
        # after use_directory: prometheus_client picks its value class at import
        from prometheus_client import CollectorRegistry, generate_latest

        registry: Any = self.registry
        if self.directory:
            registry = CollectorRegistry()
            registry.register(_WrittenFiles(self.directory))
        return generate_latest(registry).decode("utf-8")


class _WrittenFiles:
    """prometheus_client's ``MultiProcessCollector`` over the directory's files that hold their header.

    A process creates its file empty and sizes it a moment later (``MmapedDict``: open, then truncate); reading
    it in between fails (``struct.error``: a 500 from ``/metrics`` while a worker starts).  Such a file holds no
    value yet, so it is left out until it is sized (its size never goes back to 0)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def collect(self) -> Any:
        # after use_directory: prometheus_client picks its value class at import
        from prometheus_client.multiprocess import MultiProcessCollector

        return MultiProcessCollector.merge(_sized_files(Path(self.directory)), accumulate=True)


def _sized_files(directory: Path) -> list[str]:
    "The ``*.db`` files of ``directory`` past their 8-byte header's room (a file removed meanwhile is left out)"
    files = []
    for path in sorted(directory.glob("*.db")):
        try:
            if path.stat().st_size >= 8:
                files.append(str(path))
        except FileNotFoundError:
            continue
    return files
