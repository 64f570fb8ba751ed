"""The SDK's state file: one SQLite database (stdlib ``sqlite3``) in the app's state directory.

It holds the report queue (``queue.py``), the privacy ledger (``ledger.py``), cached campaign specs, the
upload switch and the counters of dropped reports.  The ledger charge and the queue insert of a report happen in
one transaction, so a crash can never leave a queued report that was not charged.  ``synchronous=FULL`` so a
report recorded before a power cut is still there.

The directory is made 0700 and the database files 0600 (POSIX): perturbed reports and the ledger are the
device's own business.  A file that is not a usable SQLite database raises :class:`StateFileError`, never a raw
``sqlite3.DatabaseError``.  Only the removal of acknowledged reports and the spec cache commit without an fsync
(:meth:`StateFile.without_fsync`): losing them in a power cut loses no report.  The schema is created in one
transaction and versioned with ``user_version``, so an up-to-date file costs one statement to check.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import StateFileError

STATE_FILE_NAME = "ldp-telemetry.sqlite3"
SCHEMA_VERSION = 2

# Running totals of the queue are kept by triggers, so its length and size cost one indexed read.
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS specs (campaign TEXT PRIMARY KEY, body TEXT NOT NULL, fingerprint TEXT NOT NULL, "
    "fetched REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS queue (seq INTEGER PRIMARY KEY AUTOINCREMENT, report_id TEXT NOT NULL UNIQUE, "
    "campaign TEXT NOT NULL, body TEXT NOT NULL, size INTEGER NOT NULL, created REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS queue_created ON queue (created)",
    "CREATE INDEX IF NOT EXISTS queue_campaign ON queue (campaign, seq)",
    "CREATE TABLE IF NOT EXISTS queue_totals (id INTEGER PRIMARY KEY CHECK (id = 1), reports INTEGER NOT NULL, "
    "bytes INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO queue_totals (id, reports, bytes) SELECT 1, count(*), coalesce(sum(size), 0) FROM queue",
    "CREATE TRIGGER IF NOT EXISTS queue_added AFTER INSERT ON queue BEGIN "
    "UPDATE queue_totals SET reports = reports + 1, bytes = bytes + NEW.size WHERE id = 1; END",
    "CREATE TRIGGER IF NOT EXISTS queue_removed AFTER DELETE ON queue BEGIN "
    "UPDATE queue_totals SET reports = reports - 1, bytes = bytes - OLD.size WHERE id = 1; END",
    "CREATE TABLE IF NOT EXISTS ledger (campaign TEXT PRIMARY KEY, epsilon REAL NOT NULL, reports INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ledger_periods (campaign TEXT NOT NULL, period INTEGER NOT NULL, "
    "reports INTEGER NOT NULL, PRIMARY KEY (campaign, period))",
    "CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
)


class StateFile:
    "A thread-safe connection with re-entrant ``BEGIN IMMEDIATE`` transactions"

    def __init__(self, state_dir: str | Path) -> None:
        directory = Path(state_dir)
        self.path = directory / STATE_FILE_NAME
        try:
            _private_directory(directory)
            _private_file(self.path)
            self.conn = sqlite3.connect(str(self.path), isolation_level=None, timeout=10, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise StateFileError(f"cannot open the SDK state file {self.path}: {exc}") from exc
        self.lock = threading.RLock()
        self._depth = 0
        try:
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = FULL")
            if self.conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                with self.transaction() as conn:
                    for statement in SCHEMA:  # not executescript: it would commit the transaction
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise StateFileError(f"the SDK state file {self.path} is damaged or not an SDK state file ({exc}); "
                                 "move it away or call client_sdk.delete_local_data(state_dir)") from exc
        for suffix in ("-wal", "-shm"):  # SQLite gives them the database's mode; tighten files from older versions
            _restrict(self.path.with_name(self.path.name + suffix))

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

    @contextmanager
    def without_fsync(self) -> Iterator[sqlite3.Connection]:
        """Writes whose loss in a power cut is harmless, committed without an fsync of the WAL (``synchronous =
        NORMAL``; still atomic): removing acknowledged reports (one that comes back is sent again, and the
        collector counts it as a duplicate of the stored one) and caching specs (fetched again).  The next
        ``synchronous = FULL`` commit (a record) fsyncs the WAL with them.  Inside a transaction: that one's."""
        with self.lock:
            if self._depth:
                yield self.conn
                return
            self.conn.execute("PRAGMA synchronous = NORMAL")
            try:
                yield self.conn
            finally:
                self.conn.execute("PRAGMA synchronous = FULL")

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

    # -- settings and counters --------------------------------------------------------------------------------
    def setting(self, name: str, default: str) -> str:
        with self.lock:
            row = self.conn.execute("SELECT value FROM settings WHERE name = ?", (name,)).fetchone()
        return row[0] if row else default

    def set_setting(self, name: str, value: str) -> None:
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO settings (name, value) VALUES (?, ?)", (name, value))

    def add_to_counter(self, name: str, amount: int) -> None:
        "Add to a persistent counter (call inside the transaction that did the counted thing)"
        with self.transaction() as conn:
            conn.execute("INSERT INTO counters (name, value) VALUES (?, ?) "
                         "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value", (name, amount))

    def counters(self) -> dict[str, int]:
        with self.lock:
            return dict(self.conn.execute("SELECT name, value FROM counters").fetchall())


def delete_local_data(state_dir: str | Path) -> None:
    "Remove the SDK's state directory (queue, ledger, specs, device secret); nothing is left on the device"
    import shutil

    directory = Path(state_dir)
    if directory.exists():
        shutil.rmtree(directory)


def _private_directory(directory: Path) -> None:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    _restrict(directory, 0o700)


def _private_file(path: Path) -> None:
    "Create the database file with mode 0600 before SQLite opens it (SQLite would use the umask)"
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    os.close(descriptor)
    _restrict(path)


def _restrict(path: Path, mode: int = 0o600) -> None:
    "Take group and other permissions away (POSIX only)"
    if os.name != "posix":
        return
    try:
        current = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return
    if current & 0o077:
        os.chmod(path, mode)
