"""The SDK's state file: one SQLite database (stdlib ``sqlite3``) in the app's state directory.

It holds the report queue (``queue.py``), the privacy ledger (``ledger.py``) and cached campaign specs.  The
ledger charge and the queue insert of a report happen in one transaction, so a crash can never leave a queued
report that was not charged.  ``synchronous=FULL`` so a report recorded before a power cut is still there.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

STATE_FILE_NAME = "ldp-telemetry.sqlite3"


class StateFile:
    "A thread-safe connection with re-entrant ``BEGIN IMMEDIATE`` transactions"

    def __init__(self, state_dir: str | Path) -> None:
        directory = Path(state_dir)
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / STATE_FILE_NAME
        self.conn = sqlite3.connect(str(self.path), isolation_level=None, timeout=10, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = FULL")
        self.lock = threading.RLock()
        self._depth = 0
        self.conn.execute("CREATE TABLE IF NOT EXISTS specs (campaign TEXT PRIMARY KEY, body TEXT NOT NULL, "
                          "fingerprint TEXT NOT NULL, fetched REAL NOT NULL)")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        "One transaction; nested calls join the outer one"
        with self.lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self.conn
                finally:
                    self._depth -= 1
                return
            self.conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            finally:
                self._depth = 0
            self.conn.execute("COMMIT")

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    # -- cached specs -----------------------------------------------------------------------------------------
    def cached_spec(self, campaign: str) -> tuple[dict, float] | None:
        "The cached spec JSON of ``campaign`` and when it was fetched"
        with self.lock:
            row = self.conn.execute("SELECT body, fetched FROM specs WHERE campaign = ?", (campaign,)).fetchone()
        return (json.loads(row[0]), row[1]) if row else None

    def cache_spec(self, campaign: str, spec: dict[str, Any], fingerprint: str, now: float) -> None:
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO specs (campaign, body, fingerprint, fetched) VALUES (?, ?, ?, ?)",
                         (campaign, json.dumps(spec), fingerprint, now))
