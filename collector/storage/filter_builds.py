"""Day filters built in a thread of the process (one per database file at a time), and the cache of loaded filters."""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..errors import StorageError

# per database file: day -> (token, DayFilter); a random token per build, so a cached filter is never stale
_day_filter_cache: dict[str, dict[int, tuple[bytes, Any]]] = {}
_filter_builders: dict[str, threading.Thread] = {}
_filter_lock_busy_since: dict[str, float] = {}  # when a build last found another process building
_filter_builders_lock = threading.Lock()


class _FilterBuilder(Protocol):
    "What a build needs of a storage: the SQLite ``Storage``, opened by the build's thread on its own connection"

    def _build_day_filters(self, days: Sequence[int]) -> bool: ...

    def close(self) -> None: ...


def _start_filter_build(path: Path, days: Sequence[int], open_builder: Callable[[], _FilterBuilder]) -> None:
    """Build the missing filters of days holding reports in a thread of this process (one per database file at a
    time; at most once a second while another process builds), on a connection of its own: the request that
    found them missing is answered without waiting for the build (a day of millions of reports takes seconds to
    read).  A build that fails or is cut short (the process exits) leaves no filter; a later insert starts it
    again."""
    key = str(path)
    with _filter_builders_lock:
        running = _filter_builders.get(key)
        if running is not None and running.is_alive():
            return
        if time.monotonic() - _filter_lock_busy_since.get(key, -math.inf) < 1.0:
            return  # not again at every batch while another process builds
        thread = threading.Thread(target=_build_filters, args=(path, list(days), open_builder),
                                  name="ldp-day-filters", daemon=True)
        _filter_builders[key] = thread
        thread.start()


def _build_filters(path: Path, days: list[int], open_builder: Callable[[], _FilterBuilder]) -> None:
    try:
        storage = open_builder()
        try:
            if not storage._build_day_filters(days):
                _filter_lock_busy_since[str(path)] = time.monotonic()
        finally:
            storage.close()
    except (sqlite3.Error, OSError, StorageError) as exc:  # tried again after a later insert
        logging.getLogger("collector").warning("building day filters failed: %s", type(exc).__name__)


def wait_for_filter_builds(timeout: float | None = None) -> None:
    "Wait until this process's day filter builds have finished (tests, benchmarks)"
    with _filter_builders_lock:
        threads = list(_filter_builders.values())
    for thread in threads:
        thread.join(timeout)
