"""The one module that touches the collector's database: campaigns, reports, aggregates, API keys, rate buckets.

Backend choice: one SQLite file through the standard ``sqlite3`` driver (schema in plain SQL, the hot insert
path; sqlite-utils only for ``Storage.db``, loaded on first use, for tests and audits), opened with

* ``journal_mode=WAL``: readers (estimates, health checks) never block the writer and vice versa;
* ``synchronous=FULL``: the WAL is fsynced at every commit, so a report acknowledged with 200 survives a crash
  of the process or the machine (NORMAL would only survive a process crash);
* ``busy_timeout``: writers from several gunicorn workers queue for the write lock instead of failing;
* ``BEGIN IMMEDIATE`` for every write transaction, so the lock is taken up front and a transaction never has to
  be retried half-way through.

Everything the API and the CLI need goes through a storage object (:func:`open_storage`): :class:`StorageBase`
holds what every backend shares (campaigns, the insert flow, aggregates, keys, rate buckets, in SQL both accept),
:class:`Storage` is SQLite's connection, transactions, schema and report insert, and ``collector.storage_pg``
the same for PostgreSQL (a ``postgresql://`` URL).

Stored per report: its UTC day, its 16 random id bytes, a small version id (``report_versions``: campaign and
version once per version, not per row) and the payload in a compact form
(``report_codec``).  Nothing else: no rowid, no time of day.  The table is ``WITHOUT ROWID`` and clustered on
(day, report_id), so within a day rows sit in the order of their random ids and nothing orders them by arrival
(a device's batch across campaigns does not land on consecutive rows), and an insert only touches the pages of
today's partition, however many past days are stored.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import functools
import hashlib
import json
import logging
import math
import operator
import os
import secrets
import shutil
import sqlite3
import threading
import time
import uuid
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from client_sdk.errors import PrivacyWarning
from client_sdk.spec import NAME_PATTERN, Spec, canonical_json, load_spec

from .errors import (  # re-exported: callers and tests import them from here
    CampaignClosed,
    CampaignNotFound,
    DatabaseCorrupt,
    DatabaseLocked,
    DiskFull,
    RateLimited,
    StorageError,
    StorageUnavailable,
    VersionConflict,
)
from .report_codec import decode_payload, encode_payloads, tagged_bytes

if TYPE_CHECKING:  # imported where used: opening a database (`keys list`) loads neither, nor numpy
    import sqlite_utils

    import estimators

ROLES = ("ingest", "admin")
KEY_PREFIX = "ldp_"
SQL_VARIABLES_PER_QUERY = 900  # stays below SQLite's historical 999 limit
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
# per database file: day -> (token, DayFilter); a random token per build, so a cached filter is never stale
_day_filter_cache: dict[str, dict[int, tuple[bytes, Any]]] = {}
_inserted_since_checkpoint: dict[str, int] = {}  # per database file, over the process's connections
_requests_since_checkpoint: dict[str, int] = {}  # per database file, over the process's connections
_last_counts: dict[str, tuple[str, list]] = {}  # per campaign fingerprint: the counts text last stored, parsed
_checkpoint_count_lock = threading.Lock()
# PRAGMA user_version of the current report schema: 2 = WITHOUT ROWID reports clustered on (day, report_id)
SCHEMA_VERSION = 2  # the reports step; LIFETIMES_SCHEMA_VERSION below is the latest
# 3 = campaigns.closed_day, api_keys.expires_day and api_keys.last_used_day (days only, never times)
LIFETIMES_SCHEMA_VERSION = 3
# 4 = day_filters: a Bloom filter over the report ids of each closed day (collector.day_filter)
FILTERS_SCHEMA_VERSION = 4
# 5 = api_keys.is_public and api_keys.campaigns (the campaigns a scoped key may read and report to)
KEY_SCOPES_SCHEMA_VERSION = 5
LATEST_SCHEMA_VERSION = KEY_SCOPES_SCHEMA_VERSION  # what migrate() leaves
DAY_FILTERS_TABLE = """CREATE TABLE IF NOT EXISTS day_filters (
    day INTEGER PRIMARY KEY,
    reports INTEGER NOT NULL,
    token BLOB NOT NULL,
    bits BLOB
)"""
KEY_COLUMNS = "key_hash, key_id, role, label, created_day, expires_day, last_used_day, is_public, campaigns"
# A report id is a duplicate if stored on the same day or on one of the DEDUP_DAYS days before: the SDK queue
# keeps a report at most 7 days (its max_age_seconds), so a retry cannot come later than that.
DEDUP_DAYS = 8
REBUILD_CHUNK = 20_000  # reports decoded and aggregated at a time by rebuild_aggregates
REPORTS_TABLE = """CREATE TABLE IF NOT EXISTS reports (
    day INTEGER NOT NULL,
    report_id BLOB NOT NULL,
    version_id INTEGER NOT NULL,
    payload BLOB NOT NULL,
    PRIMARY KEY (day, report_id)
) WITHOUT ROWID"""
# The other tables, as sqlite-utils first created them (plain SQL: opening a database imports no sqlite-utils)
BASE_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS campaigns (name TEXT, version INTEGER, fingerprint TEXT NOT NULL, spec TEXT NOT NULL,
    created_day TEXT, PRIMARY KEY (name, version))""",
    "CREATE UNIQUE INDEX IF NOT EXISTS idx_campaigns_name_fingerprint ON campaigns (name, fingerprint)",
    """CREATE TABLE IF NOT EXISTS aggregates (campaign TEXT, version INTEGER, day TEXT, n INTEGER NOT NULL,
    counts TEXT NOT NULL, PRIMARY KEY (campaign, version, day))""",
    """CREATE TABLE IF NOT EXISTS api_keys (key_hash TEXT PRIMARY KEY, key_id TEXT, role TEXT NOT NULL, label TEXT,
    created_day TEXT)""",
    "CREATE TABLE IF NOT EXISTS rate_buckets (key_hash TEXT PRIMARY KEY, tokens REAL, updated REAL)",
)
VERSIONS_TABLE = """CREATE TABLE IF NOT EXISTS report_versions (
    id INTEGER PRIMARY KEY,
    campaign TEXT NOT NULL,
    version INTEGER NOT NULL,
    UNIQUE (campaign, version)
)"""


# SQLite primary result codes (https://www.sqlite.org/rescode.html) that mean the database, not the request, failed
_FAULT_CODES: dict[int, type[StorageUnavailable]] = {
    5: DatabaseLocked, 6: DatabaseLocked, 15: DatabaseLocked,  # BUSY, LOCKED, PROTOCOL
    11: DatabaseCorrupt, 26: DatabaseCorrupt,  # CORRUPT, NOTADB
    13: DiskFull,  # FULL
    8: StorageUnavailable, 10: StorageUnavailable, 14: StorageUnavailable,  # READONLY, IOERR, CANTOPEN
}
_FAULT_MESSAGES: dict[str, type[StorageUnavailable]] = {  # Python < 3.11 has no sqlite_errorcode
    "database is locked": DatabaseLocked, "database disk image is malformed": DatabaseCorrupt,
    "file is not a database": DatabaseCorrupt, "database or disk is full": DiskFull,
    "disk i/o error": StorageUnavailable, "unable to open database file": StorageUnavailable,
    "attempt to write a readonly database": StorageUnavailable,
}


def storage_fault(exc: BaseException) -> StorageUnavailable | None:
    "The StorageUnavailable that a database or OS error stands for; None if the error is not a storage fault"
    if isinstance(exc, StorageUnavailable):
        return exc
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return DiskFull(f"no space left on the database's disk ({os.strerror(exc.errno)})")
    if type(exc).__module__.startswith(("psycopg.", "psycopg_pool")):
        from .storage_pg import postgres_fault

        return postgres_fault(exc)
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    message = str(exc).lower()
    fault = _FAULT_CODES.get(code & 0xFF) if code is not None else next(
        (cls for text, cls in _FAULT_MESSAGES.items() if text in message), None)
    return fault(f"SQLite: {exc}") if fault is not None else None


@dataclass(frozen=True)
class CampaignVersion:
    "One immutable version of a campaign"

    name: str
    version: int
    fingerprint: str
    spec: Spec
    created_day: str

    def to_dict(self) -> dict:
        "The API's form: identity fields next to the full spec, which ``load_spec`` accepts as it is"
        return {"name": self.name, "version": self.version, "fingerprint": self.fingerprint,
                "mechanism": self.spec.mechanism, "created_day": self.created_day, "spec": self.spec.to_dict()}


@dataclass(frozen=True)
class ApiKey:
    "A stored key: only its SHA-256 is kept"

    key_hash: str
    key_id: str
    role: str
    label: str
    created_day: str
    expires_day: str | None = None  # the last UTC day on which the key is accepted
    last_used_day: str | None = None
    public: bool = False  # embedded in web pages or apps: anyone may hold it (stricter rate limits apply)
    campaigns: tuple[str, ...] | None = None  # the only campaigns it may read and report to; None: all

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> ApiKey:
        "A key from its KEY_COLUMNS row (campaigns are stored as a JSON list)"
        key_hash, key_id, role, label, created_day, expires_day, last_used_day, public, campaigns = row
        return cls(key_hash, key_id, role, label, created_day, expires_day, last_used_day, bool(public),
                   None if campaigns is None else tuple(json.loads(campaigns)))

    def expired_on(self, day: str) -> bool:
        return self.expires_day is not None and day > self.expires_day

    def may_use(self, campaign: str) -> bool:
        "Whether the key's scope includes ``campaign``"
        return self.campaigns is None or campaign in self.campaigns


@dataclass
class ReportGroup:
    "Validated reports of one campaign version, with their aggregate computed before the write lock is taken"

    campaign: CampaignVersion
    report_ids: list[str]
    payloads: list[Any]
    payload_texts: list[str] = field(default_factory=list)  # no longer used by storage; kept for callers
    aggregate: estimators.Aggregate | None = None


@dataclass
class InsertResult:
    "What a batch insert did"

    accepted: int = 0
    duplicate: int = 0
    duplicate_ids: set[str] = field(default_factory=set)


# The rate bucket's clock: tokens are added in steps at multiples of this many seconds, so the stored state is a
# token count and the start of a 10-second window, never a precise request time.
RATE_WINDOW_SECONDS = 10


@dataclass(frozen=True)
class RateRule:
    """A token bucket: ``rate`` requests per second, bursts of up to ``burst``.

    A new key starts with ``burst`` tokens.  Tokens are added in steps: at each multiple of RATE_WINDOW_SECONDS
    the bucket gains ``rate * RATE_WINDOW_SECONDS`` tokens, up to :attr:`capacity`; every request takes one."""

    rate: float
    burst: float

    @property
    def step(self) -> float:
        return self.rate * RATE_WINDOW_SECONDS

    @property
    def capacity(self) -> float:
        "At least one window's worth, or a steady client could never use the whole rate"
        return max(self.burst, self.step)


class StorageBase:
    """What every backend shares: campaigns, the insert flow, per-day aggregates, rebuilds, keys and rate buckets.

    Written once, in the SQL that SQLite and PostgreSQL both accept (``?`` placeholders, which a backend may
    translate in :meth:`_sql`; ``INSERT ... ON CONFLICT``).  A backend provides the connection
    (:meth:`_connection`, :meth:`transaction`), the schema (:meth:`migrate`), the health check, the stored form of
    payloads, the report insert of one group and the aggregate update (:meth:`_insert_group`,
    :meth:`_add_to_aggregate`).  An aggregate may be stored as several rows per day (shards): readers merge them."""

    # Take the rate token at the end of the insert transaction rather than first: where the bucket is locked per
    # key (PostgreSQL), requests of one key then hold that lock through their commit only, not through the insert.
    charge_after_insert = False

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> StorageBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- backend hooks ----------------------------------------------------------------------------------------
    def migrate(self) -> None:
        raise NotImplementedError

    def check(self, *, lock_timeout: float = 1.0) -> dict:
        raise NotImplementedError

    def reset(self) -> None:
        "Roll back a transaction left open (called before each request)"

    def transaction(self) -> Any:
        raise NotImplementedError

    def _connection(self) -> Any:
        "A context manager giving the connection to run a statement on (the transaction's, if one is open)"
        raise NotImplementedError

    def _sql(self, sql: str) -> str:
        return sql

    def _encode(self, mechanism: str, payloads: list[Any]) -> list[Any]:
        return encode_payloads(mechanism, payloads)

    def _decode(self, mechanism: str, stored: Any) -> Any:
        return decode_payload(mechanism, stored)

    def _insert_group(self, group: ReportGroup, version_id: int, day: str, day_number: int, earlier: set[str],
                      result: InsertResult) -> int:
        raise NotImplementedError

    def _add_to_aggregate(self, campaign: CampaignVersion, day: str, aggregate: estimators.Aggregate) -> None:
        raise NotImplementedError

    def _lock_aggregates(self) -> None:
        "Keep writers from adding to the aggregates until this transaction ends (a rebuild); SQLite's write lock does"

    def _bucket(self, key_hash: str) -> Any:
        "The key's (tokens, updated) row inside a write transaction, locked against other writers if need be"
        return self._one("SELECT tokens, updated FROM rate_buckets WHERE key_hash = ?", (key_hash,))

    # -- statements -------------------------------------------------------------------------------------------
    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._connection() as conn:
            return list(conn.execute(self._sql(sql), params).fetchall())

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with self._connection() as conn:
            return conn.execute(self._sql(sql), params).fetchone()

    def _run(self, sql: str, params: Sequence[Any] = ()) -> int:
        "Run a statement; the number of rows it changed"
        with self._connection() as conn:
            return int(conn.execute(self._sql(sql), params).rowcount)

    def _chunks(self, sql: str, params: Sequence[Any] = ()) -> Iterator[list[Any]]:
        "The rows of a query, REBUILD_CHUNK at a time"
        with self._connection() as conn:
            cursor = conn.execute(self._sql(sql), params)
            while rows := cursor.fetchmany(REBUILD_CHUNK):
                yield rows

    def _campaign_names(self) -> list[str]:
        return [row[0] for row in self._all("SELECT DISTINCT name FROM campaigns ORDER BY name")]

    # -- campaigns --------------------------------------------------------------------------------------------
    def create_campaign(self, source: Any, day: str) -> tuple[CampaignVersion, bool]:
        """Store a spec as the next version of its campaign; (version, created).

        A spec identical (same fingerprint) to an existing version returns that version unchanged, so a retried
        create is harmless.  A ``version`` in the spec must be the next free number."""
        spec = load_spec(source)
        requested = source.get("version") if isinstance(source, dict) else None
        with self.transaction():
            existing = self.find_version(spec.name, spec.fingerprint)
            if existing is not None:
                return existing, False
            row = self._one("SELECT max(version), max(closed_day) FROM campaigns WHERE name = ?", (spec.name,))
            if row[1] is not None:
                raise CampaignClosed(f"campaign {spec.name!r} was closed on {row[1]}; it takes no new versions")
            next_version = (row[0] or 0) + 1
            if requested is not None and requested != next_version:
                raise VersionConflict(f"version must be {next_version}, the next free version of {spec.name!r}")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyWarning)
                spec = load_spec({**spec.to_dict(derived=False), "version": next_version})
            self._run("INSERT INTO campaigns (name, version, fingerprint, spec, created_day) VALUES (?, ?, ?, ?, ?)",
                      (spec.name, next_version, spec.fingerprint, spec.to_json(), day))
            self._run("INSERT INTO report_versions (campaign, version) VALUES (?, ?) ON CONFLICT DO NOTHING",
                      (spec.name, next_version))
        return CampaignVersion(spec.name, next_version, spec.fingerprint, spec, day), True

    def close_campaign(self, name: str, day: str) -> str:
        "Close every version of a campaign from ``day`` on; the day it was closed (an earlier close stands)"
        with self.transaction():
            if self._one("SELECT 1 FROM campaigns WHERE name = ?", (name,)) is None:
                raise CampaignNotFound(f"no campaign {name!r}")
            self._run("UPDATE campaigns SET closed_day = ? WHERE name = ? AND closed_day IS NULL", (day, name))
            return self._one("SELECT min(closed_day) FROM campaigns WHERE name = ?", (name,))[0]

    def closed_campaigns(self) -> dict[str, str]:
        "Closed campaigns and the day each was closed"
        return dict(self._all("SELECT name, min(closed_day) FROM campaigns WHERE closed_day IS NOT NULL "
                              "GROUP BY name"))

    def list_campaigns(self) -> list[CampaignVersion]:
        "The latest version of every campaign, by name"
        rows = self._all(
            "SELECT name, version, fingerprint, spec, created_day FROM campaigns c WHERE version = "
            "(SELECT max(version) FROM campaigns WHERE name = c.name) ORDER BY name")
        return [_campaign(row) for row in rows]

    def campaign_versions(self, name: str) -> list[CampaignVersion]:
        rows = self._all("SELECT name, version, fingerprint, spec, created_day FROM campaigns "
                         "WHERE name = ? ORDER BY version", (name,))
        return [_campaign(row) for row in rows]

    def get_campaign(self, name: str, version: int | None = None) -> CampaignVersion:
        "One version (the latest by default); CampaignNotFound otherwise"
        if version is None:
            row = self._one("SELECT name, version, fingerprint, spec, created_day FROM campaigns "
                            "WHERE name = ? ORDER BY version DESC LIMIT 1", (name,))
        else:
            row = self._one("SELECT name, version, fingerprint, spec, created_day FROM campaigns "
                            "WHERE name = ? AND version = ?", (name, version))
        if row is None:
            raise CampaignNotFound(f"no campaign {name!r}" + (f" version {version}" if version else ""))
        return _campaign(row)

    def find_version(self, name: str, fingerprint: str) -> CampaignVersion | None:
        row = self._one("SELECT name, version, fingerprint, spec, created_day FROM campaigns "
                        "WHERE name = ? AND fingerprint = ?", (name, fingerprint))
        return _campaign(row) if row else None

    # -- reports and aggregates -------------------------------------------------------------------------------
    def insert_reports(self, groups: Sequence[ReportGroup], day: str, *, key_hash: str | None = None,
                       rate: RateRule | None = None, now: float = 0.0) -> InsertResult:
        """Insert validated reports and update their aggregates in one transaction.

        Report ids must be unique across ``groups``.  Ids already stored (on ``day`` or one of the DEDUP_DAYS
        days before it) are duplicates: neither inserted nor counted again.  With ``rate`` the key's token is
        taken in the same transaction (RateLimited rolls back)."""
        result = InsertResult()
        day_number = _day_number(day)
        version_ids = [self._version_id(group.campaign) for group in groups]
        # Earlier days are not written any more, so they are searched before the write lock is taken.
        earlier = self._ids_stored_before(day_number, [r for group in groups for r in group.report_ids])
        bucket = (key_hash, rate) if key_hash is not None and rate is not None else None
        with self.transaction():
            if bucket is not None and not self.charge_after_insert:
                self._take_token(*bucket, now)
            for group, version_id in zip(groups, version_ids):
                accepted = self._insert_group(group, version_id, day, day_number, earlier, result)
                result.accepted += accepted
            if bucket is not None and self.charge_after_insert:
                self._take_token(*bucket, now)
        return result

    @staticmethod
    def _drop_duplicates(ids: list[str], payloads: list[Any], duplicates: set[str],
                         result: InsertResult) -> tuple[list[str], list[Any], None]:
        "The reports whose ids are not in ``duplicates`` (their aggregate must be recomputed)"
        keep = [i for i, report_id in enumerate(ids) if report_id not in duplicates]
        result.duplicate += len(duplicates)
        result.duplicate_ids |= duplicates
        return [ids[i] for i in keep], [payloads[i] for i in keep], None

    def _aggregate_inserted(self, campaign: CampaignVersion, day: str, payloads: list[Any],
                            aggregate: estimators.Aggregate | None) -> None:
        "Add the inserted reports to the day's aggregate (recomputed when duplicates were dropped from the group)"
        if not payloads:
            return
        if aggregate is None:
            import estimators

            aggregate = estimators.aggregate(campaign.spec, payloads)
        self._add_to_aggregate(campaign, day, aggregate)

    def _ids_stored_before(self, day_number: int, report_ids: Sequence[str]) -> set[str]:
        "Ids of ``report_ids`` stored on one of the DEDUP_DAYS days before ``day_number``"
        if not report_ids:
            return set()
        days = self._days_with_reports(range(day_number - DEDUP_DAYS, day_number))
        return self._find_ids(days, report_ids) if days else set()

    def _days_with_reports(self, day_numbers: Sequence[int]) -> list[int]:
        "Those of ``day_numbers`` on which reports are stored"
        return [day for day in day_numbers if self._one("SELECT 1 FROM reports WHERE day = ? LIMIT 1", (day,))]

    def _find_ids(self, day_numbers: Sequence[int], report_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        day_marks = ",".join("?" * len(day_numbers))
        step = SQL_VARIABLES_PER_QUERY - len(day_numbers)
        for start in range(0, len(report_ids), step):
            chunk = _ids_bytes(report_ids[start:start + step])
            marks = ",".join("?" * len(chunk))
            found.update(_id_text(r[0]) for r in self._all(
                f"SELECT report_id FROM reports WHERE day IN ({day_marks}) AND report_id IN ({marks})",
                [*day_numbers, *chunk]))
        return found

    def _version_id(self, campaign: CampaignVersion) -> int:
        "The small integer that stands for (campaign, version) in every stored report; created if missing"
        cache: dict[tuple[str, int], int] = self.__dict__.setdefault("_version_ids", {})
        key = (campaign.name, campaign.version)
        if key not in cache:
            row = self._one("SELECT id FROM report_versions WHERE campaign = ? AND version = ?", key)
            if row is None:
                with self.transaction():
                    found = self._version_id_in_transaction(*key)
                cache[key] = found  # cached only once committed: ids of rolled-back rows could be reused
            else:
                cache[key] = row[0]
        return cache[key]

    def _version_id_in_transaction(self, name: str, version: int) -> int:
        self._run("INSERT INTO report_versions (campaign, version) VALUES (?, ?) ON CONFLICT DO NOTHING",
                  (name, version))
        return int(self._one("SELECT id FROM report_versions WHERE campaign = ? AND version = ?",
                             (name, version))[0])

    def aggregates_by_day(self, campaign: CampaignVersion, since: str | None = None,
                          until: str | None = None) -> list[tuple[str, estimators.Aggregate]]:
        "The stored aggregate of every day in [since, until] that has reports, in day order (shards merged)"
        rows = self._all(
            "SELECT day, n, counts FROM aggregates WHERE campaign = ? AND version = ? AND day >= ? AND day <= ? "
            "ORDER BY day", (campaign.name, campaign.version, since or "", until or "9999-12-31"))
        out: list[tuple[str, estimators.Aggregate]] = []
        for day, n, counts in rows:
            aggregate = _aggregate(campaign, n, counts)
            if out and out[-1][0] == day:
                out[-1] = (day, out[-1][1].merge(aggregate))
            else:
                out.append((day, aggregate))
        return out

    def read_aggregate(self, campaign: CampaignVersion, since: str | None = None,
                       until: str | None = None) -> estimators.Aggregate:
        "The merged aggregate over [since, until] (empty if there are no reports)"
        import estimators

        total = estimators.Aggregate.empty(campaign.spec)
        for _, aggregate in self.aggregates_by_day(campaign, since, until):
            total = total.merge(aggregate)
        return total

    def _versions_by_id(self, name: str | None = None, version: int | None = None) -> dict[int, CampaignVersion]:
        "Stored version ids and their campaign versions, optionally of one campaign (and version)"
        campaigns = {(c.name, c.version): c for n in ([name] if name is not None else self._campaign_names())
                     for c in self.campaign_versions(n) if version is None or c.version == version}
        rows = self._all("SELECT id, campaign, version FROM report_versions")
        return {vid: campaigns[(n, v)] for vid, n, v in rows if (n, v) in campaigns}

    def iter_reports(self, name: str | None = None, version: int | None = None) -> Iterator[dict]:
        "Raw stored reports (payload decoded to its wire form), optionally of one campaign and version"
        versions = self._versions_by_id(name, version)
        if not versions:
            return
        sql = "SELECT day, report_id, version_id, payload FROM reports"
        if name is not None or version is not None:
            sql += f" WHERE version_id IN ({','.join(str(int(v)) for v in versions)})"
        days: dict[int, str] = {}
        for rows in self._chunks(sql):
            for day_number, report_id, version_id, stored in rows:
                c = versions[version_id]
                day = days.get(day_number) or days.setdefault(day_number, _day_text(day_number))
                yield {"report_id": _id_text(report_id), "campaign": c.name, "version": c.version,
                       "fingerprint": c.fingerprint, "payload": self._decode(c.spec.mechanism, stored), "day": day}

    def tagged_payload_chunks(self, campaign: CampaignVersion, day: str) -> Iterator[list[bytes]]:
        """The payloads of one version and day as ``report_codec.tagged_bytes`` (the same bytes from every backend),
        REBUILD_CHUNK at a time, in report-id order: what ``collector.archive`` exports, without the ids"""
        sql = "SELECT payload FROM reports WHERE day = ? AND version_id = ? ORDER BY report_id"
        for rows in self._chunks(sql, (_day_number(day), self._version_id(campaign))):
            yield [self._tagged(row[0]) for row in rows]

    def _tagged(self, stored: Any) -> bytes:
        "A stored payload as tagged bytes"
        return tagged_bytes(stored)

    def count_reports(self, name: str | None = None) -> int:
        "Stored reports (of one campaign): a sum over the per-day aggregates, which count every stored report"
        if name is None:
            return int(self._one("SELECT coalesce(sum(n), 0) FROM aggregates")[0])
        return int(self._one("SELECT coalesce(sum(n), 0) FROM aggregates WHERE campaign = ?", (name,))[0])

    def rebuild_aggregates(self, name: str | None = None) -> int:
        """Recompute the aggregates of one or every campaign from the raw reports; the number of rows written.

        Memory stays bounded: each day's reports are read REBUILD_CHUNK at a time and merged into one running
        aggregate per version."""
        names = [name] if name is not None else [c.name for c in self.list_campaigns()]
        written = 0
        with self.transaction():
            self._lock_aggregates()
            versions: dict[int, CampaignVersion] = {}
            for campaign_name in names:
                self._run("DELETE FROM aggregates WHERE campaign = ?", (campaign_name,))
                versions.update(self._versions_by_id(campaign_name))
            if not versions:
                return 0
            day_number = -1
            while (row := self._one("SELECT min(day) FROM reports WHERE day > ?", (day_number,))) \
                    and row[0] is not None:
                day_number = row[0]
                totals = self._aggregate_day(day_number, versions)
                for version_id in sorted(totals, key=lambda v: (versions[v].name, versions[v].version)):
                    self._add_to_aggregate(versions[version_id], _day_text(day_number), totals[version_id])
                    written += 1
        return written

    def _aggregate_day(self, day_number: int, versions: dict[int, CampaignVersion]) -> dict[int, estimators.Aggregate]:
        "Aggregates of one day's reports of ``versions``, read in chunks"
        marks = ",".join(str(int(v)) for v in versions)
        totals: dict[int, estimators.Aggregate] = {}
        for rows in self._chunks(f"SELECT version_id, payload FROM reports WHERE day = ? AND version_id IN ({marks})",
                                 (day_number,)):
            by_version: dict[int, list[Any]] = {}
            for version_id, stored in rows:
                by_version.setdefault(version_id, []).append(stored)
            for version_id, values in by_version.items():
                c = versions[version_id]
                import estimators

                part = estimators.aggregate(c.spec, [self._decode(c.spec.mechanism, v) for v in values])
                totals[version_id] = totals[version_id].merge(part) if version_id in totals else part
        return totals

    # -- keys and rate limits ---------------------------------------------------------------------------------
    def create_key(self, role: str, day: str, label: str = "", expires_day: str | None = None, *,
                   public: bool = False, campaigns: Sequence[str] | None = None) -> tuple[str, ApiKey]:
        """A new random key (returned once, in clear) and its stored record.

        :param expires_day: the last UTC day the key is valid (None: no expiry)
        :param public: a key meant to be embedded in web pages or apps (role ingest, ``campaigns`` required)
        :param campaigns: the only campaigns an ingest key may read and report to (None: all)"""
        if role not in ROLES:
            raise ValueError(f"role must be one of {list(ROLES)}")
        if expires_day is not None and expires_day < day:
            raise ValueError(f"expiry day {expires_day} is before today ({day})")
        scope = _key_scope(role, public, campaigns)
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        record = ApiKey(hash_key(key), hash_key(key)[:12], role, label, day, expires_day, public=public,
                        campaigns=scope)
        with self.transaction():
            self._run("INSERT INTO api_keys (key_hash, key_id, role, label, created_day, expires_day, is_public, "
                      "campaigns) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                      (record.key_hash, record.key_id, role, label, day, expires_day, int(public),
                       None if scope is None else json.dumps(list(scope))))
        return key, record

    def find_key(self, key: str) -> ApiKey | None:
        row = self._one(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = ?", (hash_key(key),))
        return ApiKey.from_row(row) if row else None

    def list_keys(self) -> list[ApiKey]:
        return [ApiKey.from_row(row)
                for row in self._all(f"SELECT {KEY_COLUMNS} FROM api_keys ORDER BY created_day, key_id")]

    def mark_key_used(self, key: ApiKey, day: str) -> None:
        "Record ``day`` as the key's last-use day: one write per key per day at most (callers skip same-day keys)"
        if key.last_used_day is not None and key.last_used_day >= day:
            return
        with self.transaction():
            self._run("UPDATE api_keys SET last_used_day = ? WHERE key_hash = ? "
                      "AND (last_used_day IS NULL OR last_used_day < ?)", (day, key.key_hash, day))

    def revoke_key(self, key_id: str) -> bool:
        with self.transaction():
            deleted = self._run("DELETE FROM api_keys WHERE key_id = ?", (key_id,))
            self._run("DELETE FROM rate_buckets WHERE key_hash LIKE ?", (key_id + "%",))
        return deleted > 0

    def peek_tokens(self, key_hash: str, rate: RateRule, now: float) -> float:
        "Seconds until the key may send again (0 if it may now); reads only, takes no lock"
        row = self._one("SELECT tokens, updated FROM rate_buckets WHERE key_hash = ?", (key_hash,))
        tokens, window = _refill(row, rate, now)
        return 0.0 if tokens >= 1 else _wait(tokens, window, rate, now)

    def take_token(self, key_hash: str, rate: RateRule, now: float) -> None:
        "Take one token in its own transaction; RateLimited if the bucket is empty"
        with self.transaction():
            self._take_token(key_hash, rate, now)

    def _take_token(self, key_hash: str, rate: RateRule, now: float) -> None:
        tokens, window = _refill(self._bucket(key_hash), rate, now)
        if tokens < 1:
            raise RateLimited(_wait(tokens, window, rate, now))
        # Stored: a token count (a function of request counts and window starts only) and the window's start.
        self._run("INSERT INTO rate_buckets (key_hash, tokens, updated) VALUES (?, ?, ?) ON CONFLICT (key_hash) "
                  "DO UPDATE SET tokens = excluded.tokens, updated = excluded.updated", (key_hash, tokens - 1, window))

    def row_count(self, table: str) -> int:
        "Rows of a table (tests and audits)"
        return int(self._one(f'SELECT count(*) FROM "{table}"')[0])

    def table_rows(self, table: str) -> list[dict]:
        "Every row of a table (tests and audits)"
        with self._connection() as conn:
            cursor = conn.execute(f'SELECT * FROM "{table}"')
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row)) for row in cursor.fetchall()]


class Storage(StorageBase):
    "The SQLite backend: a connection to the collector database file; cheap to open, one per request or command"

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 10_000) -> None:
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

    @cached_property
    def db(self) -> sqlite_utils.Database:
        "The connection as a sqlite-utils Database (tests and audits)"
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
        for statement in BASE_SCHEMA:
            self.conn.execute(statement)
        self._migrate_reports()
        self._migrate_lifetimes()
        self._migrate_day_filters()
        self._migrate_key_scopes()

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

    def _migrate_lifetimes(self) -> None:
        "Version 3: the days a campaign was closed, a key expires and a key was last used (NULL: never)"
        def apply(conn: sqlite3.Connection) -> None:
            for table, column in (("campaigns", "closed_day"), ("api_keys", "expires_day"),
                                  ("api_keys", "last_used_day")):
                if column not in {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")

        self._schema_step(LIFETIMES_SCHEMA_VERSION, apply)

    def _migrate_day_filters(self) -> None:
        "Version 4: the day_filters table (empty: a day's filter is built once the day is closed)"
        self._schema_step(FILTERS_SCHEMA_VERSION, lambda conn: conn.execute(DAY_FILTERS_TABLE))

    def _migrate_key_scopes(self) -> None:
        "Version 5: public keys and their campaign scope (existing keys: not public, every campaign)"
        def apply(conn: sqlite3.Connection) -> None:
            columns = {row[1] for row in conn.execute("PRAGMA table_info(api_keys)")}
            if "is_public" not in columns:
                conn.execute("ALTER TABLE api_keys ADD COLUMN is_public INTEGER NOT NULL DEFAULT 0")
            if "campaigns" not in columns:
                conn.execute("ALTER TABLE api_keys ADD COLUMN campaigns TEXT")

        self._schema_step(KEY_SCOPES_SCHEMA_VERSION, apply)

    def _copy_legacy_reports(self) -> None:
        versions = {(c.name, c.version): c for name in self._campaign_names() for c in self.campaign_versions(name)}
        ids = {key: self._version_id_in_transaction(*key) for key in versions}
        cursor = self.conn.execute("SELECT report_id, campaign, version, payload, day FROM reports_v1")
        while rows := cursor.fetchmany(REBUILD_CHUNK):
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
                       rate: RateRule | None = None, now: float = 0.0) -> InsertResult:
        """As StorageBase's; then, every CHECKPOINT_REPORTS reports (or CHECKPOINT_REQUESTS insert requests) this
        process inserted, a PASSIVE checkpoint after the writer flock is released: the next writer commits
        meanwhile instead of waiting for the checkpoint's writes and fsync.  A checkpoint that fails is simply tried
        again later: the WAL keeps every committed transaction until it is copied."""
        result = self._insert_grouped(groups, day, key_hash=key_hash, rate=rate, now=now)
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
            _start_filter_build(self.path, holding, self.busy_timeout)
        return result

    def _insert_grouped(self, groups: Sequence[ReportGroup], day: str, *, key_hash: str | None,
                        rate: RateRule | None, now: float) -> InsertResult:
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
                              now=now)
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

    # -- day filters: the duplicate check against closed days (collector.day_filter) --------------------------
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
        an id of its day.  False if another process holds the build lock."""
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
            built = {}
            # Read on a connection of its own, with a small cache and no memory map: the scan leaves neither the
            # writer's page cache full of the closed day's pages nor the day mapped into the process's RSS.
            reader = sqlite3.connect(str(self.path), isolation_level=None, timeout=self.busy_timeout)
            try:
                reader.execute("PRAGMA cache_size = -2048")
                for day in days:
                    ids = bytearray()
                    cursor = reader.execute("SELECT report_id FROM reports WHERE day = ?", (day,))
                    while rows := cursor.fetchmany(REBUILD_CHUNK):
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


@dataclass(eq=False)
class _PendingInsert:
    "One request's insert, queued for a shared transaction (Storage._insert_grouped)"

    groups: Sequence[ReportGroup]
    day: str
    day_number: int
    version_ids: list[int]
    bucket: tuple[str, RateRule] | None
    now: float
    earlier: set[str] = field(default_factory=set)
    result: InsertResult = field(default_factory=InsertResult)
    error: BaseException | None = None
    lead: bool = False
    done: threading.Event = field(default_factory=threading.Event)


@dataclass(eq=False)
class _GroupCommitQueue:
    "The inserts of one process waiting for a shared transaction on one database file; counters for tests"

    lock: threading.Lock = field(default_factory=threading.Lock)
    pending: list[_PendingInsert] = field(default_factory=list)
    leading: bool = False
    transactions: int = 0  # shared transactions begun
    committed_requests: int = 0  # requests answered by a committed shared transaction


_group_commit_queues: dict[tuple[int, str], _GroupCommitQueue] = {}
_group_commit_queues_lock = threading.Lock()


def _group_commit_queue(path: Path) -> _GroupCommitQueue:
    "This process's queue for the database file at ``path`` (a forked worker starts with its own)"
    key = (os.getpid(), str(path.resolve()))
    with _group_commit_queues_lock:
        return _group_commit_queues.setdefault(key, _GroupCommitQueue())


_filter_builders: dict[str, threading.Thread] = {}
_filter_lock_busy_since: dict[str, float] = {}  # when a build last found another process building
_filter_builders_lock = threading.Lock()


def _start_filter_build(path: Path, days: Sequence[int], busy_timeout: float) -> None:
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
        thread = threading.Thread(target=_build_filters, args=(path, list(days), busy_timeout),
                                  name="ldp-day-filters", daemon=True)
        _filter_builders[key] = thread
        thread.start()


def _build_filters(path: Path, days: list[int], busy_timeout: float) -> None:
    try:
        storage = Storage(path, busy_timeout_ms=int(busy_timeout * 1000))
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


def create_private(path: Path) -> None:
    """Create the database file readable by its owner only (0600) unless it exists: it holds API key hashes and, on
    a leader or helper, HPKE private keys and verify keys.  SQLite creates the -wal and -shm files with the database
    file's permissions, so they are 0600 too."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError:
        pass  # a directory that does not exist or cannot be written: sqlite3.connect names the problem


def restrict_database(path: Path) -> None:
    "Make an existing database (and its -wal, -shm files) readable by its owner only (a file made by an older version)"
    for name in (str(path), f"{path}-wal", f"{path}-shm"):
        try:
            if os.stat(name).st_mode & 0o077:
                os.chmod(name, 0o600)
        except FileNotFoundError:
            pass


def open_storage(target: str | Path, *, busy_timeout_ms: int = 10_000) -> StorageBase:
    "The storage named by ``target``: a ``postgresql://`` URL (PostgreSQL backend) or the path of a SQLite file"
    if is_database_url(target):
        from .storage_pg import PostgresStorage  # psycopg loads only when a PostgreSQL database is used

        return PostgresStorage(str(target), busy_timeout_ms=busy_timeout_ms)
    return Storage(target, busy_timeout_ms=busy_timeout_ms)


def is_database_url(target: str | Path) -> bool:
    "True for a PostgreSQL connection URL"
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def hash_key(key: str) -> str:
    "SHA-256 of a key; keys carry 256 random bits, so a fast hash is enough (no password stretching needed)"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _key_scope(role: str, public: bool, campaigns: Sequence[str] | None) -> tuple[str, ...] | None:
    "The sorted campaign scope of a new key; ValueError for a scope the role cannot have"
    if campaigns is None:
        if public:
            raise ValueError("a public key needs the campaigns it may report to (--campaign NAME)")
        return None
    if role != "ingest":
        raise ValueError(f"only ingest keys are scoped to campaigns, not {role} keys")
    if isinstance(campaigns, str):
        raise TypeError("campaigns must be a list of campaign names, not a string")
    names = tuple(sorted(set(campaigns)))
    if not names:
        raise ValueError("a scoped key needs at least one campaign")
    for name in names:
        if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
            raise ValueError(f"campaign {name!r} is not a campaign name")
    return names


def _refill(row: Any, rate: RateRule, now: float) -> tuple[float, float]:
    "The bucket's tokens in the window holding ``now``, and that window's start"
    window = float(now // RATE_WINDOW_SECONDS * RATE_WINDOW_SECONDS)
    if row is None:
        return rate.burst, window
    tokens, updated = row
    steps = max(0, math.floor((window - updated) / RATE_WINDOW_SECONDS + 1e-9))
    if steps:
        tokens = max(tokens, min(rate.capacity, tokens + steps * rate.step))
    return tokens, window


def _wait(tokens: float, window: float, rate: RateRule, now: float) -> float:
    "Seconds from ``now`` until the window step that brings ``tokens`` to 1"
    steps = math.ceil((1 - tokens) / rate.step)
    return window + steps * RATE_WINDOW_SECONDS - now


def _campaign(row: Sequence[Any]) -> CampaignVersion:
    name, version, fingerprint, spec_json, day = row
    return CampaignVersion(name, version, fingerprint, _stored_spec(spec_json), day)


@functools.lru_cache(maxsize=1024)
def _stored_spec(spec_json: str) -> Spec:
    "A stored spec, parsed once per text: every request reads its campaign, and a Spec is immutable"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)  # warned once, when the campaign was created
        return load_spec(spec_json)


def _id_bytes(report_id: str) -> bytes:
    "The 16 bytes of a (validated, lower-case hex) UUID string"
    return bytes.fromhex(report_id.replace("-", ""))


def _ids_bytes(report_ids: Sequence[str]) -> list[bytes]:
    "``_id_bytes`` of each id, with one hex conversion for the whole list"
    raw = _ids_joined(report_ids)
    return [raw[i:i + 16] for i in range(0, len(raw), 16)]


def _ids_joined(report_ids: Sequence[str]) -> bytes:
    "The 16 bytes of each id, concatenated (one hex conversion)"
    raw = bytes.fromhex("".join(report_ids).replace("-", ""))
    if len(raw) != 16 * len(report_ids):
        raise ValueError("report ids must be UUID strings")
    return raw


@functools.lru_cache(maxsize=64)
def _insert_returning(rows: int) -> str:
    "INSERT OR IGNORE of ``rows`` report rows, returning the ids it inserted (not those already stored)"
    return ("INSERT OR IGNORE INTO reports (day, report_id, version_id, payload) VALUES "
            + ",".join(["(?, ?, ?, ?)"] * rows) + " RETURNING report_id")


def _id_text(raw: bytes) -> str:
    return str(uuid.UUID(bytes=raw))


def _day_number(day: str) -> int:
    "A UTC date as the integer stored in reports.day (its proleptic Gregorian ordinal)"
    return dt.date.fromisoformat(day).toordinal()


def _day_text(day_number: int) -> str:
    return dt.date.fromordinal(day_number).isoformat()


def _aggregate(campaign: CampaignVersion, n: int, counts: str) -> estimators.Aggregate:
    import estimators

    return estimators.Aggregate.from_dict({"mechanism": campaign.spec.mechanism, "fingerprint": campaign.fingerprint,
                                           "n": n, "counts": json.loads(counts)})


def merged_counts(campaign: CampaignVersion, row: tuple[int, str] | None,
                  aggregate: estimators.Aggregate) -> tuple[int, str]:
    """(n, counts as stored) of the stored aggregate ``row`` (n, counts JSON; None: none yet) plus ``aggregate``:
    what ``Aggregate.from_dict(row).merge(aggregate).to_dict()`` stores, added in Python lists instead of numpy
    arrays (a request's aggregate is a few hundred counts at most; the arrays' per-call cost was most of it)"""
    import estimators

    if (aggregate.mechanism, aggregate.fingerprint) != (campaign.spec.mechanism, campaign.fingerprint):
        raise estimators.AggregateMismatch(f"cannot merge aggregates of {campaign.fingerprint} and "
                                           f"{aggregate.fingerprint}")
    counts = aggregate.counts.tolist()  # int64: Python ints already
    if aggregate.counts.dtype == object:
        counts = _plain_counts(counts)
    if row is not None:
        # The stored text is most often what this process wrote last for the campaign: parsed then, not again.
        # Parsing the same text gives the same lists (never changed in place), so the cache cannot hide a change.
        last = _last_counts.get(campaign.fingerprint)
        stored = last[1] if last is not None and last[0] == row[1] else json.loads(row[1])
        counts = _add_counts(stored, counts)
    text = json.dumps(counts)
    _last_counts[campaign.fingerprint] = (text, counts)
    return (int(aggregate.n) if row is None else int(row[0]) + int(aggregate.n)), text


def _plain_counts(counts: list) -> list:
    "Nested lists of Python ints (an object array's tolist() may hold numpy integers)"
    return [_plain_counts(c) if type(c) is list else int(c) for c in counts]


def _add_counts(stored: list, added: list) -> list:
    "Element-wise sum of two equally shaped nested lists of ints; a stored aggregate of another shape is an error"
    if len(stored) != len(added):
        raise StorageError(f"stored aggregate has {len(stored)} counts, the reports' has {len(added)}")
    if added and type(added[0]) is list:
        return [_add_counts(a, b) for a, b in zip(stored, added)]
    return list(map(operator.add, map(int, stored), added))


def payload_text(payload: Any) -> str:
    "The stored form of a payload: canonical JSON"
    return canonical_json(payload)
