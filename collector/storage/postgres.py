"""The PostgreSQL backend of the collector's storage: several collector processes (on several hosts) share one database.

Selected by a ``postgresql://`` URL as ``--db`` (or ``LDP_DATABASE_URL``).  Only the SQL and the connection
handling live here; campaigns, the insert flow, keys and rate buckets are :class:`collector.storage.base.StorageBase`.

* Connections: psycopg 3.  The storage of a request thread (``collector.db``) borrows connections from one pool
  per process and URL (re-created after a fork); a storage opened by a command or at start-up uses one connection
  of its own, closed with it.
* Reports: one ``INSERT ... SELECT FROM unnest(...) ON CONFLICT DO NOTHING RETURNING report_id`` per group, in id
  order, so that a report sent to two processes at once is stored once (the second insert waits for the first
  transaction and then skips the row) and only the reports really inserted are aggregated.  Commits are durable
  (``synchronous_commit`` as the server sets it, on by default) before the 200 is sent.
* Aggregates: ``AGGREGATE_SHARDS`` rows per (campaign, version, day); a transaction adds its counts to one of them
  chosen at random, so concurrent writers rarely wait for the same row lock; readers merge the shards.
* Rate buckets: the read-modify-write of a key's bucket holds a transaction-level advisory lock on the key, so
  every process sees and charges the same bucket; an insert takes its token last, so the lock lasts only until
  its commit (an empty bucket still rolls the insert back).
* Schema: versioned migrations (``schema_migrations``), then the campaign kinds' own
  (``collector.storage.kind_migrations``), applied under an advisory lock by whichever process starts first.
* Faults: connection failures, a full disk (SQLSTATE 53100 gives 507), lock and serialization failures map to
  the same StorageUnavailable classes as SQLite's, so the API answers 503/507 the same way.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import psycopg_pool

import estimators

from ..config import DEFAULTS
from ..errors import DatabaseCorrupt, DatabaseLocked, DiskFull, StorageUnavailable
from ..report_codec import decode_payload, encode_payloads, tagged_bytes, untagged
from . import base as _base
from .base import StorageBase
from .filter_builds import _start_filter_build
from .kind_migrations import KIND_VERSIONS_TABLE, apply_kind_migrations
from .models import CampaignVersion, InsertResult, ReportGroup
from .rows import _day_number, _day_text, _id_bytes, merged_counts

AGGREGATE_SHARDS = 8
POOL_MAX_CONNECTIONS = 16  # per process: gunicorn's threads of one worker, with room for health checks
MIGRATION_LOCK = 0x6C6470  # pg_advisory_xact_lock key of the schema migration ("ldp")
SCRUB_LOCK = 0x6C6473  # pg_try_advisory_xact_lock key of scrubbing ("lds"): one process at a time
SCRUB_RECHECK_SECONDS = 600.0  # a process looks for days to scrub at its first insert of a day, then this often
_scrub_checked: dict[str, tuple[str, float]] = {}  # per URL: the day and time.monotonic() of the last look
TABLES = ("campaigns", "report_versions", "reports", "aggregates", "api_keys", "rate_buckets")
# Versioned migrations: (version, statements).  Never edit an applied one; append the next.
MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (1, (
        "CREATE TABLE campaigns (name text NOT NULL, version integer NOT NULL, fingerprint text NOT NULL, "
        "spec text NOT NULL, created_day text, PRIMARY KEY (name, version))",
        "CREATE UNIQUE INDEX campaigns_name_fingerprint ON campaigns (name, fingerprint)",
        "CREATE TABLE report_versions (id serial PRIMARY KEY, campaign text NOT NULL, version integer NOT NULL, "
        "UNIQUE (campaign, version))",
        # no time, no address: the day, a random id, the version and the payload's compact form
        "CREATE TABLE reports (day integer NOT NULL, report_id bytea NOT NULL, version_id integer NOT NULL, "
        "payload bytea NOT NULL, PRIMARY KEY (day, report_id))",
        "CREATE TABLE aggregates (campaign text NOT NULL, version integer NOT NULL, day text NOT NULL, "
        "shard smallint NOT NULL, n bigint NOT NULL, counts text NOT NULL, "
        "PRIMARY KEY (campaign, version, day, shard))",
        "CREATE TABLE api_keys (key_hash text PRIMARY KEY, key_id text, role text NOT NULL, label text, "
        "created_day text)",
        "CREATE TABLE rate_buckets (key_hash text PRIMARY KEY, tokens double precision, updated double precision)",
    )),
    # campaign and key lifetimes: days only, never times
    (2, (
        "ALTER TABLE campaigns ADD COLUMN closed_day text",
        "ALTER TABLE api_keys ADD COLUMN expires_day text",
        "ALTER TABLE api_keys ADD COLUMN last_used_day text",
    )),
    # public keys and their campaign scope (a JSON list; NULL: every campaign)
    (3, (
        "ALTER TABLE api_keys ADD COLUMN is_public integer NOT NULL DEFAULT 0",
        "ALTER TABLE api_keys ADD COLUMN campaigns text",
    )),
    # nothing: a database at this version has the prio3 kind's tables, made by that kind's migration 1
    # (collector.distributed.schema), which leaves them as they are
    (4, ()),
    # the closed days whose reports are scrubbed (collector.storage.day_scrub), with their count of reports then
    (5, ("CREATE TABLE scrubbed_days (day text PRIMARY KEY, reports bigint NOT NULL)",)),
    # the last migration of each campaign kind's own tables (collector.storage.kind_migrations)
    (6, (KIND_VERSIONS_TABLE,)),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]

_pools: dict[tuple[int, str], psycopg_pool.ConnectionPool] = {}
_pools_lock = threading.Lock()
_cursor_names = itertools.count()


def shared_pool(url: str, timeout: float) -> psycopg_pool.ConnectionPool:
    "This process's pool for ``url`` (a forked child opens its own; it never touches its parent's connections)"
    key = (os.getpid(), url)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = psycopg_pool.ConnectionPool(url, min_size=1, max_size=POOL_MAX_CONNECTIONS, timeout=timeout,
                                               open=True, name=f"ldp-{os.getpid()}")
            _pools[key] = pool
    return pool


@atexit.register
def close_pools() -> None:
    "Close this process's pools"
    with _pools_lock:
        for (pid, url), pool in list(_pools.items()):
            if pid == os.getpid():
                pool.close()
                del _pools[(pid, url)]


class PostgresStorage(StorageBase):
    "A view of the collector database on a PostgreSQL server; cheap to open, one per request thread or command"

    charge_after_insert = True
    dialect = "postgresql"

    def __init__(self, url: str, *, busy_timeout_ms: int = DEFAULTS["BUSY_TIMEOUT_MS"], pooled: bool = False) -> None:
        self.url = url
        self.busy_timeout = busy_timeout_ms / 1000
        self._pool = shared_pool(url, self.busy_timeout) if pooled else None
        self._conn: psycopg.Connection | None = None
        self._tx: psycopg.Connection | None = None

    @property
    def location(self) -> str:
        return self.url

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- connections and transactions -------------------------------------------------------------------------
    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s")

    @contextmanager
    def _checkout(self, timeout: float) -> Iterator[psycopg.Connection]:
        "A connection, committed when the block ends and rolled back on an exception; faults mapped"
        try:
            if self._pool is not None:
                with self._pool.connection(timeout=timeout) as conn:
                    yield conn
                return
            if self._conn is None or self._conn.closed:
                self._conn = psycopg.connect(self.url, connect_timeout=max(1, round(timeout)))
            try:
                yield self._conn
            except BaseException:
                if not self._conn.closed:
                    self._conn.rollback()
                raise
            self._conn.commit()
        except psycopg.Error as exc:
            fault = postgres_fault(exc)
            if fault is None:
                raise
            raise fault from exc

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        if self._tx is not None:
            yield self._tx
        else:
            with self._checkout(self.busy_timeout) as conn:
                yield conn

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection]:
        "One transaction on one connection; every statement of this storage runs in it until it ends"
        if self._tx is not None:
            raise RuntimeError("transactions do not nest")
        with self._checkout(self.busy_timeout) as conn:
            # a row lock held by a stuck process gives 503 after the busy timeout, like SQLite's write lock
            conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{int(self.busy_timeout * 1000)}ms",))
            self._tx = conn
            try:
                yield conn
            finally:
                self._tx = None

    def _chunks(self, sql: str, params: Sequence[Any] = ()) -> Iterator[list[Any]]:
        "Rows through a server-side cursor, so a rebuild or an export holds one chunk in memory"
        with self._connection() as conn, conn.cursor(name=f"ldp_chunks_{next(_cursor_names)}") as cursor:
            cursor.execute(self._sql(sql), params)
            while rows := cursor.fetchmany(_base.REBUILD_CHUNK):
                yield rows

    def _encode(self, mechanism: str, payloads: list[Any]) -> list[Any]:
        return [tagged_bytes(value) for value in encode_payloads(mechanism, payloads)]

    def _decode(self, mechanism: str, stored: Any) -> Any:
        return decode_payload(mechanism, untagged(stored))

    def _tagged(self, stored: Any) -> bytes:
        return bytes(stored)  # stored tagged already

    # -- schema and health ------------------------------------------------------------------------------------
    def migrate(self) -> None:
        "Apply the migrations not yet applied, in order, in one transaction; idempotent, safe from several processes"
        with self.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY)")
            applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            for version, statements in MIGRATIONS:
                if version in applied:
                    continue
                for statement in statements:
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
            apply_kind_migrations(conn, self.dialect)  # then the kinds' own tables

    def schema_version(self) -> int:
        row = self._one("SELECT coalesce(max(version), 0) FROM schema_migrations")
        return int(row[0])

    def check(self, *, lock_timeout: float = 1.0) -> dict:
        """StorageUnavailable unless the server answers within ``lock_timeout`` seconds, every table can be read
        and the server accepts writes (not a standby).  The server's free disk space is not visible from here
        (``free_bytes`` is None); a full disk shows as 507 on the next write."""
        with self._checkout(lock_timeout) as conn:
            for table in TABLES:
                conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchall()
            if conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]:  # type: ignore[index]
                raise StorageUnavailable("the PostgreSQL server is a read-only standby")
        return {"free_bytes": None}

    # -- reports and aggregates -------------------------------------------------------------------------------
    def _insert_group(self, group: ReportGroup, version_id: int, day: str, day_number: int, earlier: set[str],
                      result: InsertResult) -> int:
        "One statement for the group; the ids it did not insert were stored already (duplicates)"
        conn = self._transaction_connection()
        c = group.campaign
        ids, payloads, aggregate = group.report_ids, group.payloads, group.aggregate
        if earlier and not earlier.isdisjoint(ids):
            ids, payloads, aggregate = self._drop_duplicates(ids, payloads, earlier & set(ids), result)
        if not ids:
            return 0
        rows = sorted(zip((_id_bytes(report_id) for report_id in ids), self._encode(c.spec.mechanism, payloads)))
        inserted = [row[0] for row in conn.execute(
            "INSERT INTO reports (day, report_id, version_id, payload) "
            "SELECT %s, r, %s, p FROM unnest(%b::bytea[], %b::bytea[]) AS t(r, p) ORDER BY r "
            "ON CONFLICT DO NOTHING RETURNING report_id",
            (day_number, version_id, [r for r, _ in rows], [p for _, p in rows])).fetchall()]
        if len(inserted) != len(ids):
            new = set(inserted)
            ids, payloads, aggregate = self._drop_duplicates(
                ids, payloads, {report_id for report_id in ids if _id_bytes(report_id) not in new}, result)
        self._aggregate_inserted(c, day, payloads, aggregate)
        return len(ids)

    def insert_reports(self, groups: Sequence[ReportGroup], day: str, **kwargs: Any) -> InsertResult:
        "As StorageBase's; then, at the first insert of a day (and every SCRUB_RECHECK_SECONDS), scrub closed days"
        result = super().insert_reports(groups, day, **kwargs)
        last = _scrub_checked.get(self.url)
        if last is None or last[0] != day or time.monotonic() - last[1] >= SCRUB_RECHECK_SECONDS:
            _scrub_checked[self.url] = (day, time.monotonic())
            _start_filter_build(Path(self.url), [_day_number(day)], functools.partial(
                PostgresStorage, self.url, busy_timeout_ms=int(self.busy_timeout * 1000)))
        return result

    def _build_day_filters(self, days: Sequence[int]) -> bool:
        """PostgreSQL keeps no day filters: its work on closed days (in a thread, ``_start_filter_build``) is the
        scrub.  A scrub that fails is tried again at the next check (``SCRUB_RECHECK_SECONDS``)."""
        try:
            self.scrub_closed_days(_day_text(max(days)))
        except psycopg.Error as exc:
            logging.getLogger("collector").warning("scrubbing closed days failed: %s", type(exc).__name__)
        return True

    def scrub_closed_days(self, day: str) -> list[str]:
        """Scrub the days before ``day`` whose reports are not scrubbed yet (none, or more reports than when they
        were): ``CLUSTER`` writes ``reports`` into a new file in (day, report id) order, its index rebuilt, then
        ``aggregates`` without its dead row versions, each in a transaction (a crash leaves the old file, nothing
        lost) that removes the old file at commit; the days scrubbed.  Writers of reports wait meanwhile (at most
        the busy timeout: then 503 and a retry).  Nothing if another process is scrubbing.  (The distributed
        tables are scrubbed per batch: ``DistStore.scrub_batch``.)"""
        with self.transaction() as conn:
            if not conn.execute("SELECT pg_try_advisory_xact_lock(%s)", (SCRUB_LOCK,)).fetchone()[0]:  # type: ignore[index]
                return []
            counts = "SELECT day, sum(n) FROM aggregates WHERE day < %s GROUP BY day"
            if not conn.execute(f"{counts} EXCEPT SELECT day, reports FROM scrubbed_days", (day,)).fetchall():
                return []
            conn.execute("CLUSTER reports USING reports_pkey")
            # counted while reports is locked: every insert in flight has committed, and no other can start
            days = [row[0] for row in conn.execute(
                f"INSERT INTO scrubbed_days (day, reports) {counts} ON CONFLICT (day) DO UPDATE "
                "SET reports = excluded.reports RETURNING day", (day,)).fetchall()]
        # aggregates too: each insert left a dead version of its day's shard row, and the differences between
        # successive versions would be the requests' reports in order of arrival.  A transaction of its own: a
        # rebuild locks aggregates, then reads reports; holding both here would deadlock with it.
        with self.transaction() as conn:
            conn.execute("CLUSTER aggregates USING aggregates_pkey")
        return days

    def _add_to_aggregate(self, campaign: CampaignVersion, day: str, aggregate: estimators.Aggregate) -> None:
        "Add to one shard row chosen at random: a new row, or the stored one locked, merged and updated"
        conn = self._transaction_connection()
        key = (campaign.name, campaign.version, day, secrets.randbelow(AGGREGATE_SHARDS))
        data = aggregate.to_dict()
        while True:  # a second pass only if the row we collided with was deleted before we could lock it
            if conn.execute("INSERT INTO aggregates (campaign, version, day, shard, n, counts) "
                            "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1",
                            (*key, data["n"], json.dumps(data["counts"]))).fetchone():
                return
            row = conn.execute("SELECT n, counts FROM aggregates WHERE campaign = %s AND version = %s AND day = %s "
                               "AND shard = %s FOR UPDATE", key).fetchone()
            if row is not None:
                break
        n, counts = merged_counts(campaign, row, aggregate)
        conn.execute("UPDATE aggregates SET n = %s, counts = %s WHERE campaign = %s AND version = %s "
                     "AND day = %s AND shard = %s", (n, counts, *key))

    def _lock_aggregates(self) -> None:
        """Writers wait (ROW EXCLUSIVE conflicts with EXCLUSIVE) until the rebuild commits; readers do not.  A writer
        that inserted reports but has not reached the aggregates cannot commit before the rebuild does, so the
        rebuild counts exactly the reports whose aggregates it replaces."""
        self._run("LOCK TABLE aggregates IN EXCLUSIVE MODE")

    def _transaction_connection(self) -> psycopg.Connection:
        if self._tx is None:
            raise RuntimeError("only inside a transaction")
        return self._tx

    def _days_with_reports(self, day_numbers: Sequence[int]) -> list[int]:
        "One round trip instead of one per day"
        return [row[0] for row in self._all(
            "SELECT d FROM unnest(?::integer[]) AS t(d) WHERE EXISTS (SELECT 1 FROM reports WHERE day = d) ORDER BY d",
            (list(day_numbers),))]

    def _bucket(self, key_hash: str) -> Any:
        "The key's bucket, read under a transaction-level lock on the key that every process takes"
        self._run("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (key_hash,))
        return self._one("SELECT tokens, updated FROM rate_buckets WHERE key_hash = ?", (key_hash,))


# SQLSTATE classes and codes (https://www.postgresql.org/docs/current/errcodes-appendix.html) that mean the
# database, not the request, failed
_FAULT_STATES: dict[str, type[StorageUnavailable]] = {
    "53100": DiskFull,  # disk_full
    "40001": DatabaseLocked, "40P01": DatabaseLocked,  # serialization_failure, deadlock_detected
    "55P03": DatabaseLocked, "57014": DatabaseLocked,  # lock_not_available (lock_timeout), query_canceled
    "XX001": DatabaseCorrupt, "XX002": DatabaseCorrupt,  # data_corrupted, index_corrupted
    "25006": StorageUnavailable,  # read_only_sql_transaction (a standby)
}
_FAULT_CLASSES = ("08", "53", "57", "58")  # connection, insufficient resources, operator intervention, system


def postgres_fault(exc: BaseException) -> StorageUnavailable | None:
    "The StorageUnavailable that a psycopg or pool error stands for; None if the error is the request's own"
    if isinstance(exc, StorageUnavailable):
        return exc
    if isinstance(exc, psycopg_pool.PoolTimeout):
        return StorageUnavailable(f"PostgreSQL: no connection free or reachable ({exc})")
    state = getattr(exc, "sqlstate", None)
    if state in _FAULT_STATES:
        return _FAULT_STATES[state](f"PostgreSQL: {exc}")
    if state is not None and state[:2] in _FAULT_CLASSES:
        return StorageUnavailable(f"PostgreSQL: {exc}")
    if state is None and isinstance(exc, psycopg.OperationalError):  # the server is unreachable or went away
        return StorageUnavailable(f"PostgreSQL: {exc}")
    return None
