"""The SDK's state file: one SQLite database (stdlib ``sqlite3``) in the app's state directory.

It holds the report queue (``queue.py``), the privacy ledger (``ledger.py``), cached campaign specs, the
upload switch, the counters of dropped reports and the values recorded before their spec arrived (``held.py``).
The ledger charge and the queue insert of a report happen in one transaction, so a crash can never leave a queued
report that was not charged.  ``synchronous=FULL`` so a report recorded before a power cut is still there.

The directory is made 0700 and the database files 0600 (POSIX): perturbed reports and the ledger are the
device's own business.  A file that is not a usable SQLite database raises :class:`StateFileError`, never a raw
``sqlite3.DatabaseError``.  Only the removal of acknowledged reports and the spec cache commit without an fsync
(:meth:`StateFile.without_fsync`): losing them in a power cut loses no report.  The schema is created in one
transaction and versioned with ``user_version``, so an up-to-date file costs one statement to check; a file
this open creates gets it in one script (``executescript``), its version not read.

Why WAL: a record's commit is one append to the WAL and one fsync (a rollback journal needs two fsyncs and a
journal file created and deleted per commit), and only in WAL mode does ``synchronous=NORMAL`` still give an
atomic commit without an fsync, which the removals and the spec cache use.
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

from ..errors import StateFileError

STATE_FILE_NAME = "ldp-telemetry.sqlite3"
SCHEMA_VERSION = 5  # 3: the RAPPOR device secret moved into the database (table device); 4: held values (held.py);
# 5: ledger.delta, .last_batch (distributed batches).  Any earlier version upgrades in one step: SCHEMA (IF NOT EXISTS)
# and ADDED_COLUMNS
PAGE_SIZE = 1024  # of new files: a device's state is small, and each commit writes whole pages to the WAL

# Running totals of the queue are kept by triggers, so its length and size cost one indexed read.  Pages written per
# record: the ledger's tables are WITHOUT ROWID (one B-tree, not a table and its key's index; their rows are small,
# unlike a spec's, which would spill into overflow pages of an index-shaped tree) and the queue's
# seq is a plain rowid (the largest + 1: insertion order among queued reports) rather than AUTOINCREMENT (which
# writes sqlite_sequence on every insert): 7 pages a record instead of 10.  Files made before keep their tables;
# every statement works on both.
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS specs (campaign TEXT PRIMARY KEY, body TEXT NOT NULL, fingerprint TEXT NOT NULL, "
    "fetched REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS queue (seq INTEGER PRIMARY KEY, report_id TEXT NOT NULL UNIQUE, "
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
    "CREATE TABLE IF NOT EXISTS ledger (campaign TEXT PRIMARY KEY, epsilon REAL NOT NULL, reports INTEGER NOT NULL, "
    "delta REAL NOT NULL DEFAULT 0, last_batch TEXT) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS ledger_periods (campaign TEXT NOT NULL, period INTEGER NOT NULL, "
    "reports INTEGER NOT NULL, PRIMARY KEY (campaign, period)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS device (id INTEGER PRIMARY KEY CHECK (id = 1), secret BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS held (seq INTEGER PRIMARY KEY, campaign TEXT NOT NULL, value TEXT NOT NULL, "
    "recorded REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS held_campaign ON held (campaign, seq)",
)
# The specs row of a campaign the collector listed as closed (final: a closed campaign takes no new version), so
# that record() answers campaign_closed from the next start on: this body and an empty fingerprint
CLOSED_SPEC_BODY = '{"closed": true}'
# Columns added to tables of files made before (version 5): ALTER TABLE on an upgrade, where they are missing
ADDED_COLUMNS = (("ledger", "delta", "REAL NOT NULL DEFAULT 0"), ("ledger", "last_batch", "TEXT"))


def _add_columns(conn: sqlite3.Connection) -> None:
    "The columns of ``ADDED_COLUMNS`` a file made before lacks (its tables were created without them)"
    for table, column, declaration in ADDED_COLUMNS:
        if column not in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")


class StateFile:
    "A thread-safe connection with re-entrant ``BEGIN IMMEDIATE`` transactions"

    def __init__(self, state_dir: str | Path) -> None:
        directory = Path(state_dir)
        self.path = directory / STATE_FILE_NAME
        try:
            _private_directory(directory)
            image = _template()
            self.fresh = _private_file(self.path, image)
            self.conn = sqlite3.connect(str(self.path), isolation_level=None, timeout=10, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise StateFileError(f"cannot open the SDK state file {self.path}: {exc}") from exc
        self.lock = threading.RLock()
        self._depth = 0
        self._synchronous = ""  # the level last set on the connection (set again only when it changes)
        self._no_fsync = False
        # A file written from the template has an empty WAL: its first commit without an fsync (the spec cache)
        # need not fsync the WAL's header either (see without_fsync)
        self._wal_empty = self.fresh and image is not None
        try:
            if self.fresh:  # this call created the file: written whole from the template, or one script makes it
                if image is None:
                    self._create()
            else:
                self.conn.execute("PRAGMA journal_mode = WAL")
                if self.conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                    with self.transaction() as conn:
                        for statement in SCHEMA:  # not executescript: it would commit the transaction
                            conn.execute(statement)
                        _add_columns(conn)
                        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise StateFileError(f"the SDK state file {self.path} is damaged or not an SDK state file ({exc}); "
                                 "move it away or call client_sdk.delete_local_data(state_dir)") from exc
        if not self.fresh:  # SQLite gives them the database's mode; tighten files from older versions
            for suffix in ("-wal", "-shm"):
                _restrict(self.path.with_name(self.path.name + suffix))

    def _create(self) -> None:
        """A new file: small pages (a device's file is small, and a commit writes whole pages to the WAL), WAL, the
        schema in one transaction, committed without an fsync (a power cut loses only the empty tables, made
        again on the next open; the first record's fsync makes them durable with it).

        The switch to WAL writes the file's first page (the header) and fsyncs it; it goes through journal mode OFF
        first, because from the default mode it would create, fsync (twice) and delete a rollback journal and fsync
        the directory: 3 fsyncs and a file creation per device.  The journal only guards the header of an empty
        file: without it a power cut in the middle of that one-page write could leave a torn header (the next open
        then raises StateFileError); a process crash cannot tear it (one pwrite)."""
        script = ";".join((f"PRAGMA page_size = {PAGE_SIZE}", "PRAGMA journal_mode = OFF", "PRAGMA journal_mode = WAL",
                           "PRAGMA synchronous = NORMAL", "BEGIN IMMEDIATE", *SCHEMA,
                           f"PRAGMA user_version = {SCHEMA_VERSION}", "COMMIT"))
        try:
            self.conn.executescript(script)
        except sqlite3.Error:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        self._synchronous = "NORMAL"

    def _sync(self, level: str) -> None:
        if self._synchronous != level:
            self.conn.execute(f"PRAGMA synchronous = {level}")
            self._synchronous = level

    def fsync_commits(self) -> sqlite3.Connection:
        """The connection, set so that its next commit is fsynced unless inside :meth:`without_fsync` (for a write
        autocommitted outside :meth:`transaction`; hold ``lock``)"""
        if not self._no_fsync:
            self._wal_empty = False
            self._sync("FULL")
        elif self._synchronous != "OFF":  # OFF: the first commit to a template's WAL (see without_fsync)
            self._sync("NORMAL")
        return self.conn

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
            self.fsync_commits()
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
        ``synchronous = FULL`` commit (a record) fsyncs the WAL with them.  Inside a transaction: that one's.
        The level is set again only when it changes (every other commit sets FULL first)."""
        with self.lock:
            if self._depth:
                yield self.conn
                return
            if self._wal_empty:
                # The first commit to the WAL of a file written from the template: at NORMAL, SQLite fsyncs the new
                # WAL's header (and the directory) before writing it.  OFF skips that: nothing can be checkpointed
                # from a WAL this short, and the first fsynced commit (a record) syncs the whole WAL, header
                # included, and the directory; a power cut before it leaves a WAL SQLite ignores (the template's
                # empty tables remain)
                self._wal_empty = False
                self._sync("OFF")
            else:
                self._sync("NORMAL")
            previous, self._no_fsync = self._no_fsync, True
            try:
                yield self.conn
            finally:
                self._no_fsync = previous

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

    def cache_spec_texts(self, rows: list[tuple[str, str, str, float]]) -> None:
        "Cache several specs at once: (campaign, spec JSON, fingerprint, fetched) each, in one transaction"
        if rows:
            with self.transaction() as conn:
                conn.executemany("INSERT OR REPLACE INTO specs (campaign, body, fingerprint, fetched) "
                                 "VALUES (?, ?, ?, ?)", rows)

    # -- the RAPPOR device secret --------------------------------------------------------------------------------
    def device_secret(self) -> bytes | None:
        "The device's RAPPOR secret, if one was stored"
        with self.lock:
            row = self.conn.execute("SELECT secret FROM device WHERE id = 1").fetchone()
        return bytes(row[0]) if row else None

    def store_device_secret(self, secret: bytes) -> bytes:
        """Store ``secret`` unless the device has one already (another client on this directory stored it first);
        the secret stored.  Call inside the transaction that queues the first report made with it, so the secret is
        durable exactly when a report drawn with it is."""
        with self.transaction() as conn:
            if conn.execute("INSERT OR IGNORE INTO device (id, secret) VALUES (1, ?)", (secret,)).rowcount:
                return secret
            return bytes(conn.execute("SELECT secret FROM device WHERE id = 1").fetchone()[0])

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
    # imported here: shutil (+6 ms) only to delete the state folder
    import shutil

    directory = Path(state_dir)
    if directory.exists():
        shutil.rmtree(directory)


def _private_directory(directory: Path) -> None:
    "Make the directory 0700 (a new one is made so: the umask can only take bits away), or tighten it"
    try:
        os.mkdir(directory, 0o700)
        return
    except FileNotFoundError:
        directory.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(directory, 0o700)
        return
    except FileExistsError:
        pass
    _restrict(directory, 0o700)


def _private_file(path: Path, image: bytes | None = None) -> bool:
    """Create the database file with mode 0600 before SQLite opens it (SQLite would use the umask), or tighten the
    one there; True if this call created it.

    With ``image`` (the template, see :func:`_template`) the file is written whole under a temporary name,
    fsynced, and linked to ``path`` only if no file is there (``os.link`` never replaces one): an opener in
    another thread or process sees no file or a complete one, never a half-written one.  The directory's entry
    becomes durable with SQLite's first fsync of the WAL, which fsyncs the directory."""
    if image is None:
        try:
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
            return True
        except FileExistsError:
            _restrict(path)
            return False
    if os.path.lexists(path):
        _restrict(path)
        return False
    temporary = path.with_name(f"{path.name}.new-{os.urandom(8).hex()}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.write(descriptor, image)  # a regular file takes the whole buffer (or raises)
            getattr(os, "fdatasync", os.fsync)(descriptor)
        finally:
            os.close(descriptor)
        try:
            os.link(temporary, path)
        except FileExistsError:  # another opener created it first
            _restrict(path)
            return False
        return True
    finally:
        os.unlink(temporary)


_TEMPLATE: list[bytes | None] = []
_connect = sqlite3.connect  # the template's own in-memory connection (tests trace sqlite3.connect: the files')


def _template() -> bytes | None:
    """The bytes of a new, empty state file, built once per process: the schema and ``user_version`` in pages of
    ``PAGE_SIZE``, in WAL mode (header bytes 18 and 19 = 2, as SQLite's switch writes them; SQLite's file format,
    sqlite.org/fileformat2.html#database_header).  A new file is written from it in one write and one fsync,
    instead of SQLite parsing and running the schema and writing every page to the WAL (and copying them into the
    file at close).  None where ``Connection.serialize`` (Python 3.11) is missing: SQLite makes the file then."""
    if not _TEMPLATE:
        image = None
        if hasattr(sqlite3.Connection, "serialize"):
            conn = _connect(":memory:", isolation_level=None)
            try:
                conn.executescript(";".join((f"PRAGMA page_size = {PAGE_SIZE}", "BEGIN", *SCHEMA,
                                             f"PRAGMA user_version = {SCHEMA_VERSION}", "COMMIT")))
                data = bytearray(conn.serialize())
            finally:
                conn.close()
            data[18] = data[19] = 2  # file format write and read versions: 2 is WAL
            image = bytes(data)
        _TEMPLATE.append(image)
    return _TEMPLATE[0]


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
