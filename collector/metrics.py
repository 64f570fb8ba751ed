"""Prometheus metrics shared by every gunicorn worker: counters in one small memory-mapped file per worker.

Each worker process writes only its own file (``<metrics_dir>/worker-<pid>.bin``, an array of doubles) and
``/metrics`` sums every file in the directory, so any worker answers for the whole service.  Files of workers
that died stay and keep counting towards the totals (counters never go down), the same scheme as the
multiprocess mode of prometheus_client.  Without a directory (tests, a single process) the array lives in memory.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

ENDPOINTS = ("reports", "campaigns", "estimate", "health", "other")
STATUS_CLASSES = ("2xx", "4xx", "5xx")
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
REPORT_OUTCOMES = ("accepted", "duplicate", "rejected")

# layout: report outcomes | requests[endpoint][status] | per endpoint: buckets..., +Inf, sum, count
_REPORTS = 0
_REQUESTS = _REPORTS + len(REPORT_OUTCOMES)
_HISTOGRAMS = _REQUESTS + len(ENDPOINTS) * len(STATUS_CLASSES)
_HISTOGRAM_SIZE = len(LATENCY_BUCKETS) + 3
SLOTS = _HISTOGRAMS + len(ENDPOINTS) * _HISTOGRAM_SIZE


class Metrics:
    "The counters of this process, and the exposition of all processes' counters"

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory else None
        self._pid = -1
        self._values: memoryview | None = None
        self._local = [0.0] * SLOTS

    def _slots(self) -> memoryview | list[float]:
        if self.directory is None:
            return self._local
        if self._pid != os.getpid():  # first use in this (possibly forked) process
            self.directory.mkdir(parents=True, exist_ok=True)
            path = self.directory / f"worker-{os.getpid()}.bin"
            with open(path, "wb") as handle:
                handle.write(b"\0" * (8 * SLOTS))
            with open(path, "r+b") as handle:
                self._mmap = mmap.mmap(handle.fileno(), 8 * SLOTS)
            self._values = memoryview(self._mmap).cast("d")
            self._pid = os.getpid()
        assert self._values is not None
        return self._values

    def count_reports(self, accepted: int, duplicate: int, rejected: int) -> None:
        slots = self._slots()
        slots[_REPORTS] += accepted
        slots[_REPORTS + 1] += duplicate
        slots[_REPORTS + 2] += rejected

    def observe_request(self, endpoint: str, status: int, seconds: float) -> None:
        slots = self._slots()
        e = ENDPOINTS.index(endpoint) if endpoint in ENDPOINTS else len(ENDPOINTS) - 1
        s = min(max(status // 100 - 3, 0), 2) if status >= 400 else 0
        slots[_REQUESTS + e * len(STATUS_CLASSES) + s] += 1
        base = _HISTOGRAMS + e * _HISTOGRAM_SIZE
        for i, bound in enumerate(LATENCY_BUCKETS):
            if seconds <= bound:
                slots[base + i] += 1
        slots[base + len(LATENCY_BUCKETS)] += 1  # +Inf
        slots[base + len(LATENCY_BUCKETS) + 1] += seconds
        slots[base + len(LATENCY_BUCKETS) + 2] += 1

    def totals(self) -> list[float]:
        "The sum over every worker's counters"
        if self.directory is None:
            return list(self._local)
        total = [0.0] * SLOTS
        for path in self.directory.glob("worker-*.bin"):
            data = path.read_bytes()
            if len(data) != 8 * SLOTS:
                continue
            for i, value in enumerate(memoryview(data).cast("d")):
                total[i] += value
        return total

    def exposition(self) -> str:
        "Prometheus text format 0.0.4"
        t = self.totals()
        lines = ["# HELP ldp_reports_total Reports received by outcome.", "# TYPE ldp_reports_total counter"]
        lines += [f'ldp_reports_total{{outcome="{o}"}} {t[_REPORTS + i]:.0f}' for i, o in enumerate(REPORT_OUTCOMES)]
        lines += ["# HELP ldp_http_requests_total HTTP requests by endpoint and status class.",
                  "# TYPE ldp_http_requests_total counter"]
        for e, endpoint in enumerate(ENDPOINTS):
            for s, status in enumerate(STATUS_CLASSES):
                value = t[_REQUESTS + e * len(STATUS_CLASSES) + s]
                lines.append(f'ldp_http_requests_total{{endpoint="{endpoint}",status="{status}"}} {value:.0f}')
        lines += ["# HELP ldp_http_request_duration_seconds Request latency.",
                  "# TYPE ldp_http_request_duration_seconds histogram"]
        for e, endpoint in enumerate(ENDPOINTS):
            base = _HISTOGRAMS + e * _HISTOGRAM_SIZE
            name = "ldp_http_request_duration_seconds"
            for i, bound in enumerate(LATENCY_BUCKETS):
                lines.append(f'{name}_bucket{{endpoint="{endpoint}",le="{bound}"}} {t[base + i]:.0f}')
            lines.append(f'{name}_bucket{{endpoint="{endpoint}",le="+Inf"}} {t[base + len(LATENCY_BUCKETS)]:.0f}')
            lines.append(f'{name}_sum{{endpoint="{endpoint}"}} {t[base + len(LATENCY_BUCKETS) + 1]:.6f}')
            lines.append(f'{name}_count{{endpoint="{endpoint}"}} {t[base + len(LATENCY_BUCKETS) + 2]:.0f}')
        return "\n".join(lines) + "\n"
