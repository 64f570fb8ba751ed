"""The SQLite backend (:class:`Storage`): connection pragmas, transactions under a writer flock, migrations, the
report insert with its group commit and checkpoint policy, and the duplicate check through day filters."""

from __future__ import annotations

import fcntl
import functools
import json
import logging
import os
import secrets
import shutil
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import DEFAULTS
from ..errors import (
    DatabaseLocked,
    RateLimited,
    StorageError,
    StorageUnavailable,
)
from ..report_codec import encode_payloads
from . import base as _base
from .base import DEDUP_DAYS, SQL_VARIABLES_PER_QUERY, StorageBase
from .day_scrub import rewrite_table, scrub_sqlite_day, truncate_wal
from .faults import storage_fault
from .file_modes import create_private
from .filter_builds import _day_filter_cache, _start_filter_build
from .group_commit import _group_commit_queue, _GroupCommitQueue, _PendingInsert
from .kind_migrations import applied_versions, apply_kind_migrations, pending
from .models import CampaignVersion, InsertResult, RateRule, ReportGroup
from .rows import _day_number, _ids_bytes, _ids_joined, merged_counts
from .sqlite_schema import (
    BASE_SCHEMA,
    LATER_STEPS,
    LATEST_SCHEMA_VERSION,
    REPORTS_TABLE,
    SCHEMA_VERSION,
    VERSIONS_TABLE,
)

if TYPE_CHECKING:  # imported where used: opening a database (`keys list`) loads neither, nor numpy
    import sqlite_utils

    import estimators


INSERT_ROWS_PER_STATEMENT = SQL_VARIABLES_PER_QUERY // 4  # a report row binds 4 values
CACHE_KIB = 64 * 1024  # page cache per connection: keeps the report_id index hot for random-UUID inserts
# Pages of the database file are read through a memory map (shared by every connection, no copy per read): the
# duplicate lookup in the previous days' partitions reads about one uncached page per report once they outgrow
# the page cache.  SQLite still writes with write(), never through the map.
MMAP_BYTES = 1 << 31
# Fewer, larger checkpoints: index pages that several commits touch are copied to the database file once.
WAL_AUTOCHECKPOINT_PAGES = 16384
# A process checkpoints after inserting this many reports (each dirties about one page of its day's partition),
# once its writer flock is released (Storage.insert_reports); SQLite's automatic checkpoint, which runs inside
# COMMIT and so while the flock is held, is left as a backstop at a larger WAL.
CHECKPOINT_REPORTS = WAL_AUTOCHECKPOINT_PAGES
# ... or after this many insert requests, whatever their size: a request of one report still commits about three
# pages (mostly the same hot pages again), so counting reports alone let small commits grow the WAL to ~85 MB
# (8,000 one-report requests), and a growing WAL file makes every fsync commit its new size too.  512 one-report
# requests write at most a few MB of WAL; 512 requests of 1,000 reports reach CHECKPOINT_REPORTS long before.
CHECKPOINT_REQUESTS = 512
WAL_BACKSTOP_PAGES = 4 * WAL_AUTOCHECKPOINT_PAGES
_inserted_since_checkpoint: dict[str, int] = {}  # per database file, over the process's connections
_requests_since_checkpoint: dict[str, int] = {}  # per database file, over the process's connections
_checkpoint_count_lock = threading.Lock()


class Storage(StorageBase):
    "The SQLite backend: a connection to the collector database file; cheap to open, one per request or command"

    dialect = "sqlite"

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = DEFAULTS["BUSY_TIMEOUT_MS"]) -> None:
        self.path = Path(path)
        self.busy_timeout = busy_timeout_ms / 1000
        create_private(self.path)
        self.conn = sqlite3.connect(str(self.path), isolation_level=None, timeout=busy_timeout_ms / 1000)
        self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        self.conn.execute("PRAGMA synchronous = FULL")
        self.conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_BACKSTOP_PAGES}")
        self.conn.execute(f"PRAGMA cache_size = {-CACHE_KIB}")
        self.conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        self._lock_fd: int | None = None
        self._lock_closer: Any = None

    @property
    def location(self) -> str:
        return str(self.path.resolve())

    @cached_property
    def db(self) -> sqlite_utils.Database:
        "The connection as a sqlite-utils Database (tests and audits)"
        # imported here: sqlite-utils (+810 ms, 510 modules) only to create or migrate the schema
        import sqlite_utils

        return sqlite_utils.Database(self.conn)

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        yield self.conn

    def reset(self) -> None:
        if self.conn.in_transaction:  # never carry a half-done transaction into the next request
            self.conn.execute("ROLLBACK")

    def close(self) -> None:
        self.conn.close()
        if self._lock_closer is not None:
            self._lock_closer()  # closes the lock file once, also when the object is garbage collected

    # -- schema and transactions ------------------------------------------------------------------------------
    def migrate(self) -> None:
        "Create the tables if they are missing and switch the file to WAL; idempotent"
        self.conn.execute("PRAGMA journal_mode = WAL")
        before = self.conn.execute("PRAGMA user_version").fetchone()[0]
        for statement in BASE_SCHEMA:
            self.conn.execute(statement)
        self._migrate_reports()
        for version, apply in LATER_STEPS:
            self._schema_step(version, apply)
        if pending(applied_versions(self.conn)):  # the kinds' own tables, checked first without the write lock
            with self.transaction() as conn:
                apply_kind_migrations(conn, self.dialect)
        if before < LATEST_SCHEMA_VERSION:
            # the migration's pages (a new file: every table and index) leave the WAL at once, so that the WAL's
            # size is set by the commits of reports, which the checkpoint policy bounds
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _schema_step(self, version: int, apply: Callable[[sqlite3.Connection], object]) -> None:
        """``apply(conn)`` and ``PRAGMA user_version = version`` in one transaction, unless the file is at
        ``version`` already: checked first without the write lock, then again under it (another process may have
        migrated while this one waited)"""
        if self.conn.execute("PRAGMA user_version").fetchone()[0] >= version:
            return
        with self.transaction() as conn:
            if conn.execute("PRAGMA user_version").fetchone()[0] >= version:
                return
            apply(conn)
            conn.execute(f"PRAGMA user_version = {version}")

    def _migrate_reports(self) -> None:
        """Bring the reports schema to SCHEMA_VERSION (PRAGMA user_version), in one transaction.

        Version 0/1 (a rowid table with campaign, fingerprint and hex payload text per row) is copied into the
        new table in chunks, payloads re-encoded; aggregates are unchanged."""
        def apply(conn: sqlite3.Connection) -> None:
            legacy = "fingerprint" in {row[1] for row in conn.execute("PRAGMA table_info(reports)")}
            if legacy:
                conn.execute("ALTER TABLE reports RENAME TO reports_v1")
            conn.execute(VERSIONS_TABLE)
            conn.execute(REPORTS_TABLE)
            conn.execute("INSERT OR IGNORE INTO report_versions (campaign, version) "
                         "SELECT name, version FROM campaigns ORDER BY name, version")
            if legacy:
                self._copy_legacy_reports()
                conn.execute("DROP TABLE reports_v1")

        self._schema_step(SCHEMA_VERSION, apply)

    def _copy_legacy_reports(self) -> None:
        versions = {(c.name, c.version): c for name in self._campaign_names() for c in self.campaign_versions(name)}
        ids = {key: self._version_id_in_transaction(*key) for key in versions}
        cursor = self.conn.execute("SELECT report_id, campaign, version, payload, day FROM reports_v1")
        while rows := cursor.fetchmany(_base.REBUILD_CHUNK):
            out = []
            for report_id, name, version, text, day in rows:
                campaign = versions[(name, version)]
                stored = encode_payloads(campaign.spec.mechanism, [json.loads(text)])[0]
                out.append((_day_number(day), report_id, ids[(name, version)], stored))
            self.conn.executemany("INSERT OR IGNORE INTO reports (day, report_id, version_id, payload) "
                                  "VALUES (?, ?, ?, ?)", out)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception; storage faults raise StorageUnavailable.

        Writers first queue on an flock of ``<db>.writer-lock``: SQLite's own busy handler polls with sleeps of
        up to 100 ms, which wastes most of the time when several gunicorn workers write; polling the flock every
        few milliseconds hands over sooner.  Both waits end after the busy timeout (DatabaseLocked), so a lock
        held by a stuck process gives 503 instead of a worker blocked until it is killed."""
        try:
            lock_fd = self._lock_writer(self.busy_timeout)
        except OSError as exc:  # the lock file cannot be created (disk full, read-only directory)
            raise (storage_fault(exc) or StorageUnavailable(f"database writer lock: {exc.strerror}")) from exc
        try:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self.conn
                    self.conn.execute("COMMIT")
                except BaseException:
                    if self.conn.in_transaction:  # SQLite may already have rolled back (e.g. after SQLITE_FULL)
                        with suppress(sqlite3.Error):
                            self.conn.execute("ROLLBACK")
                    raise
            except (sqlite3.DatabaseError, OSError) as exc:
                fault = storage_fault(exc)
                if fault is None:
                    raise
                raise fault from exc
        finally:
            fcntl.flock(lock_fd, fcntl.LOCK_UN)

    def _lock_writer(self, timeout: float) -> int:
        "Take the writer flock, polling until ``timeout`` seconds have passed (then DatabaseLocked); its fd"
        if self._lock_fd is None:
            self._lock_fd = os.open(f"{self.path}.writer-lock", os.O_RDWR | os.O_CREAT, 0o600)
            self._lock_closer = weakref.finalize(self, os.close, self._lock_fd)
        deadline, delay = time.monotonic() + timeout, 0.0005
        while True:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self._lock_fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise DatabaseLocked(f"database writer lock busy for more than {timeout:g} s") from None
                time.sleep(delay)
                delay = min(2 * delay, 0.005)

    @contextmanager
    def _writer_locked(self) -> Iterator[None]:
        "The writer flock held for the block (no transaction)"
        lock_fd = self._lock_writer(self.busy_timeout)
        try:
            yield
        finally:
            fcntl.flock(lock_fd, fcntl.LOCK_UN)

    def check(self, *, lock_timeout: float = 1.0) -> dict:
        """StorageUnavailable unless every table can be read and the write lock taken within ``lock_timeout``
        seconds (taken and released at once: nothing is written); free disk space next to it"""
        try:
            tables = [r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:  # reads the first page of each table: catches a damaged file cheaply
                self.conn.execute(f'SELECT * FROM "{table}" LIMIT 1').fetchall()
            lock_fd = self._lock_writer(lock_timeout)
            try:
                self.conn.execute(f"PRAGMA busy_timeout = {int(lock_timeout * 1000)}")
                self.conn.execute("BEGIN IMMEDIATE")
                self.conn.execute("ROLLBACK")
            finally:
                self.conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
                fcntl.flock(lock_fd, fcntl.LOCK_UN)
        except (sqlite3.DatabaseError, OSError) as exc:
            fault = storage_fault(exc)
            if fault is None:
                raise
            raise fault from exc
        return {"free_bytes": shutil.disk_usage(self.path.resolve().parent).free}

    # -- reports and aggregates -------------------------------------------------------------------------------
    def insert_reports(self, groups: Sequence[ReportGroup], day: str, *, key_hash: str | None = None,
                       rate: RateRule | None = None, now: float = 0.0,
                       within: Callable[[StorageBase, InsertResult], None] | None = None) -> InsertResult:
        """As StorageBase's; then, every CHECKPOINT_REPORTS reports (or CHECKPOINT_REQUESTS insert requests) this
        process inserted, a PASSIVE checkpoint after the writer flock is released: the next writer commits
        meanwhile instead of waiting for the checkpoint's writes and fsync.  A checkpoint that fails is simply tried
        again later: the WAL keeps every committed transaction until it is copied."""
        result = self._insert_grouped(groups, day, key_hash=key_hash, rate=rate, now=now, within=within)
        key = str(self.path)
        with _checkpoint_count_lock:
            count = _inserted_since_checkpoint.get(key, 0) + result.accepted
            requests = _requests_since_checkpoint.get(key, 0) + 1
            due = count >= CHECKPOINT_REPORTS or requests >= CHECKPOINT_REQUESTS
            _inserted_since_checkpoint[key] = 0 if due else count
            _requests_since_checkpoint[key] = 0 if due else requests
        if due:
            with suppress(sqlite3.Error):
                self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        empty, holding = self.__dict__.pop("_filters_wanted", ((), ()))
        if empty:  # days without reports: their (empty) filters cost two small transactions, written now
            try:
                self._build_day_filters(empty)
            except (sqlite3.Error, OSError, StorageError) as exc:  # the reports are committed: tried again later
                logging.getLogger("collector").warning("building day filters failed: %s", type(exc).__name__)
        if holding:
            _start_filter_build(self.path, holding, functools.partial(
                Storage, self.path, busy_timeout_ms=int(self.busy_timeout * 1000)))
        return result

    def _insert_grouped(self, groups: Sequence[ReportGroup], day: str, *, key_hash: str | None,
                        rate: RateRule | None, now: float,
                        within: Callable[[StorageBase, InsertResult], None] | None = None) -> InsertResult:
        """StorageBase.insert_reports, its transaction shared with the inserts of this process's other threads
        (group commit): the reads before the lock are this request's own; then it joins the queue of its
        database file.  If no thread is committing, it becomes the leader: it takes the writer lock, and once it
        holds it (while it waited, and while the previous commit was fsynced, more requests queued), it runs
        every queued request in one BEGIN IMMEDIATE ... COMMIT on its connection, one fsync for them all, then
        answers each.  Each request keeps its own result (accepted, duplicates) and its own rate-limit decision
        (the token is taken first, before anything of the request is written, so RateLimited leaves the others'
        rows alone).  A storage fault (lock timeout, full disk, damaged file, a failed COMMIT) rolls back the
        whole transaction and fails every request in it; nothing of theirs is stored, none was answered.  Any
        other error of one request rolls back, fails that request only, and the others run again in a new
        transaction.  A request is answered only after the COMMIT that holds its reports."""
        bucket = (key_hash, rate) if key_hash is not None and rate is not None else None
        item = _PendingInsert(groups=groups, day=day, day_number=_day_number(day),
                              version_ids=[self._version_id(group.campaign) for group in groups], bucket=bucket,
                              now=now, within=within)
        # Earlier days are not written any more, so they are searched before the write lock is taken.
        item.earlier = self._ids_stored_before(item.day_number, [r for group in groups for r in group.report_ids])
        self.__dict__.setdefault("_days_known", {})[item.day_number] = True  # (_days_with_reports)
        pid, queue = self.__dict__.get("_commit_queue", (None, None))
        if pid != os.getpid():  # found once per connection and process: resolving the path costs system calls
            queue = _group_commit_queue(self.path)
            self.__dict__["_commit_queue"] = (os.getpid(), queue)
        with queue.lock:
            queue.pending.append(item)
            lead = item.lead = not queue.leading
            queue.leading = True
        if not lead:
            item.done.wait()  # set once the request is answered, or to make it the leader
        while item.lead:  # this thread leads: commit what is queued, then hand over to the next waiting request
            item.lead = False
            item.done.clear()
            try:
                self._commit_queued(queue)
            finally:
                with queue.lock:
                    if queue.pending:
                        successor = queue.pending[0]
                        successor.lead = True
                        successor.done.set()
                    else:
                        queue.leading = False
            item.done.wait()  # already set unless this request was queued again (another one failed)
        if item.error is not None:
            raise item.error
        return item.result

    def _commit_queued(self, queue: _GroupCommitQueue) -> None:
        "One shared transaction over the requests queued once the writer lock is held; each one is answered"
        batch: list[_PendingInsert] = []
        try:
            with self.transaction():
                with queue.lock:
                    batch, queue.pending = queue.pending, []
                queue.transactions += 1
                self._run_batch(batch)
        except BaseException as exc:
            others = [waiter for waiter in batch if not waiter.done.is_set()]
            if len(others) < len(batch):  # one request failed on its own (answered): the others run again
                for waiter in others:
                    waiter.result, waiter.error = InsertResult(), None
                with queue.lock:
                    queue.pending[:0] = others
                return
            # the shared transaction failed: every request in it fails, none stored
            if not batch:  # the lock or BEGIN failed: the requests queued now were the transaction's
                with queue.lock:
                    batch, queue.pending = queue.pending, []
            for waiter in batch:
                waiter.result, waiter.error = InsertResult(), exc
                waiter.done.set()
            return
        queue.committed_requests += len(batch)
        for waiter in batch:
            waiter.done.set()

    def _run_batch(self, batch: list[_PendingInsert]) -> None:
        """Run each request of ``batch`` in the open transaction.  RateLimited is that request's answer (raised
        before it wrote anything); a storage fault fails the transaction; any other error of one request fails
        that request alone (answered at once) and is raised: the transaction rolls back and the others run again."""
        for waiter in batch:
            result = InsertResult()
            try:
                if waiter.bucket is not None:
                    self._take_token(*waiter.bucket, waiter.now)
                for group, version_id in zip(waiter.groups, waiter.version_ids):
                    result.accepted += self._insert_group(group, version_id, waiter.day, waiter.day_number,
                                                          waiter.earlier, result)
                if waiter.within is not None:  # sees the requests before it in this transaction
                    waiter.within(self, result)
            except RateLimited as exc:
                waiter.error = exc
                continue
            except (sqlite3.DatabaseError, OSError):
                raise
            except Exception as exc:
                waiter.result, waiter.error = InsertResult(), exc
                waiter.done.set()
                raise
            waiter.result = result

    def _days_with_reports(self, day_numbers: Sequence[int]) -> list[int]:
        """As StorageBase's, in one statement for the days not known yet.  Remembered by this connection: a day
        with reports (they are never deleted, and this connection's own inserts mark their day), and a day
        without any once it is before the latest of ``day_numbers`` (the day before the request's: the API
        stamps a request with its day when it starts, so only that latest day may still receive reports, from a
        request that started before midnight)."""
        known: dict[int, bool] = self.__dict__.setdefault("_days_known", {})
        unknown = [day for day in day_numbers if day not in known]
        found: set[int] = set()
        if unknown:
            values = ",".join(["(?)"] * len(unknown))
            found = {row[0] for row in self.conn.execute(
                f"WITH d(day) AS (VALUES {values}) SELECT day FROM d "
                "WHERE EXISTS (SELECT 1 FROM reports r WHERE r.day = d.day)", unknown)}
            latest = max(day_numbers)
            for day in unknown:
                if day in found or day < latest:
                    known[day] = day in found
        return [day for day in day_numbers if day in found or known.get(day, False)]

    def rebuild_aggregates(self, name: str | None = None) -> int:
        "As StorageBase's, without the memory map: a scan of every report would map the whole file into the RSS"
        self.conn.execute("PRAGMA mmap_size = 0")
        try:
            return super().rebuild_aggregates(name)
        finally:
            self.conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")

    # -- day filters: the duplicate check against closed days (collector.storage.day_filter) --------------------------
    def _ids_stored_before(self, day_number: int, report_ids: Sequence[str]) -> set[str]:
        """As StorageBase's, but a day of the window whose filter is built is searched only for the ids its filter
        calls "maybe" (nearly none for fresh ids) instead of one B-tree seek per id.  The days of the window
        without a filter are searched as before and remembered, to be built after the insert."""
        if not report_ids:
            return set()
        window = range(day_number - DEDUP_DAYS, day_number)
        filters = self._day_filters(window)
        unfiltered = [day for day in window if day not in filters]
        days = self._days_with_reports(unfiltered) if unfiltered else []
        self._filters_wanted = ([day for day in unfiltered if day not in days], days)
        maybe_days, maybe = [], None
        raw = b""
        for day, day_filter in filters.items():
            if not len(day_filter.bits):
                continue  # no reports on that day
            raw = raw or _ids_joined(report_ids)
            present = day_filter.maybe_present(raw)
            if present.any():
                maybe_days.append(day)
                maybe = present if maybe is None else maybe | present
        if days:  # every id is searched on the unfiltered days anyway: one query for all
            return self._find_ids(days + maybe_days, report_ids)
        if maybe is not None:  # one query for the few ids some filter did not rule out
            return self._find_ids(maybe_days, [report_ids[i] for i in maybe.nonzero()[0]])
        return set()

    def _day_filters(self, window: range) -> dict[int, Any]:
        "The built filters of the days in ``window`` (one statement; a filter's bits are read once per process)"
        # imported here: the day filters (+97 ms) with the first query about a closed day
        from .day_filter import DayFilter

        cache = _day_filter_cache.setdefault(str(self.path), {})
        out = {}
        for day, token in self.conn.execute("SELECT day, token FROM day_filters WHERE day >= ? AND day < ? "
                                            "AND reports >= 0", (window.start, window.stop)).fetchall():
            cached = cache.get(day)
            if cached is None or cached[0] != token:
                row = self.conn.execute("SELECT bits FROM day_filters WHERE day = ? AND token = ? AND reports >= 0",
                                        (day, token)).fetchone()
                if row is None:  # replaced meanwhile: searched exactly this time
                    continue
                cached = cache[day] = (token, DayFilter(row[0]))
            out[day] = cached[1]
        for day in list(cache):
            if day < window.start:
                cache.pop(day, None)  # out of every later window (days only grow)
        return out

    def _build_day_filters(self, days: Sequence[int]) -> bool:
        """Build and store the filters of ``days`` (all before today), unless another process is building (run in
        a thread of its own, ``_start_filter_build``).

        A late insert into one of them (a request that took its day just before midnight) deletes that day's
        filter row in its own transaction (``_insert_group``).  The filter is read from a snapshot taken after a
        claim row (a random token) is committed, and stored only if that claim row is still there: an insert
        before the claim is in the snapshot, one after it has deleted the claim, so a stored filter never misses
        an id of its day.  Between the claim and the snapshot each day is scrubbed (``day_scrub``): a day whose
        filter is stored is in report-id order on disk.  False if another process holds the build lock."""
        # imported here: the day filters (+97 ms) with the first query about a closed day
        from .day_filter import DayFilter

        lock_fd = os.open(f"{self.path}.filter-lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # another process builds them
            token = secrets.token_bytes(16)
            with self.transaction() as conn:
                ready = {row[0] for row in conn.execute("SELECT day FROM day_filters WHERE day >= ? AND day <= ? "
                                                        "AND reports >= 0", (min(days), max(days)))}
                days = [day for day in days if day not in ready]
                conn.executemany("INSERT OR REPLACE INTO day_filters (day, reports, token, bits) "
                                 "VALUES (?, -1, ?, NULL)", [(day, token) for day in days])

            def claim_held(day: int, conn: sqlite3.Connection) -> bool:
                return conn.execute("SELECT 1 FROM day_filters WHERE day = ? AND token = ?",
                                    (day, token)).fetchone() is not None

            scrubbed = {day: scrub_sqlite_day(self.transaction, day, functools.partial(claim_held, day))
                        for day in days}
            days = [day for day in days if scrubbed[day] is not None]  # others: a late insert; a later build
            if any(scrubbed.values()):  # no older version of the days' aggregate rows either
                rewrite_table(self.transaction, "aggregates")
            built = {}
            # Read on a connection of its own, with a small cache and no memory map: the scan leaves neither the
            # writer's page cache full of the closed day's pages nor the day mapped into the process's RSS.
            reader = sqlite3.connect(str(self.path), isolation_level=None, timeout=self.busy_timeout)
            try:
                reader.execute("PRAGMA cache_size = -2048")
                for day in days:
                    ids = bytearray()
                    cursor = reader.execute("SELECT report_id FROM reports WHERE day = ?", (day,))
                    while rows := cursor.fetchmany(_base.REBUILD_CHUNK):
                        ids += b"".join(row[0] for row in rows)
                    built[day] = (len(ids) // 16, DayFilter.build(ids))  # no copy of the ids
            finally:
                reader.close()
            cache = _day_filter_cache.setdefault(str(self.path), {})
            with self.transaction() as conn:
                for day, (reports, day_filter) in built.items():
                    if conn.execute("UPDATE day_filters SET reports = ?, bits = ? WHERE day = ? AND reports = -1 "
                                    "AND token = ?", (reports, day_filter.to_bytes(), day, token)).rowcount:
                        # cached before the commit makes the row visible, so this process's requests never read
                        # the bits back; an entry whose transaction rolls back is never used (its token is not
                        # stored)
                        cache[day] = (token, day_filter)
            if any(scrubbed.values()):  # no frame of the days' earlier pages left in the WAL
                truncate_wal(self.conn, self._writer_locked)
            return True
        finally:
            os.close(lock_fd)

    def _insert_group(self, group: ReportGroup, version_id: int, day: str, day_number: int, earlier: set[str],
                      result: InsertResult) -> int:
        """Insert one group: INSERT OR IGNORE ... RETURNING in key order; the ids it did not return were stored
        already on this day (duplicates), so their reports are dropped and the aggregate recomputed.

        No savepoint: inside one, SQLite copies every page the insert touches to a statement journal first,
        which doubled the insert's CPU time."""
        c, conn = group.campaign, self.conn
        ids, payloads, aggregate = group.report_ids, group.payloads, group.aggregate
        if earlier and not earlier.isdisjoint(ids):
            ids, payloads, aggregate = self._drop_duplicates(ids, payloads, earlier & set(ids), result)
        if not ids:
            return 0
        # in key order: each B-tree page is visited once, in one pass, however the batch arrived
        raw_ids = _ids_bytes(ids)
        rows = sorted(zip(raw_ids, encode_payloads(c.spec.mechanism, payloads)))
        conn.execute("DELETE FROM day_filters WHERE day = ?", (day_number,))  # a filter covers a closed day only
        returned: list[tuple[bytes]] = []
        for start in range(0, len(rows), INSERT_ROWS_PER_STATEMENT):
            chunk = rows[start:start + INSERT_ROWS_PER_STATEMENT]
            values = [value for report_id, stored in chunk for value in (day_number, report_id, version_id, stored)]
            returned += conn.execute(_insert_returning(len(chunk)), values).fetchall()
        if len(returned) != len(ids):
            inserted = {row[0] for row in returned}
            ids, payloads, aggregate = self._drop_duplicates(
                ids, payloads, {r for r, raw in zip(ids, raw_ids) if raw not in inserted}, result)
            if len(ids) != len(inserted):  # an id repeated within the group: it would be aggregated twice
                raise StorageError("report ids must be unique within an insert; transaction rolled back")
        self._aggregate_inserted(c, day, payloads, aggregate)
        return len(ids)

    def _add_to_aggregate(self, campaign: CampaignVersion, day: str, aggregate: estimators.Aggregate) -> None:
        row = self.conn.execute("SELECT n, counts FROM aggregates WHERE campaign = ? AND version = ? AND day = ?",
                                (campaign.name, campaign.version, day)).fetchone()
        n, counts = merged_counts(campaign, row, aggregate)
        self.conn.execute("INSERT OR REPLACE INTO aggregates (campaign, version, day, n, counts) "
                          "VALUES (?, ?, ?, ?, ?)", (campaign.name, campaign.version, day, n, counts))



@functools.lru_cache(maxsize=64)
def _insert_returning(rows: int) -> str:
    "INSERT OR IGNORE of ``rows`` report rows, returning the ids it inserted (not those already stored)"
    return ("INSERT OR IGNORE INTO reports (day, report_id, version_id, payload) VALUES "
            + ",".join(["(?, ?, ?, ?)"] * rows) + " RETURNING report_id")
