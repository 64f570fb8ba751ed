"""The one module that touches the collector's database: campaigns, reports, aggregates, API keys, rate buckets.

Backend choice: one SQLite file through sqlite-utils (schema, simple reads) and the standard ``sqlite3`` driver
(the hot insert path), opened with

* ``journal_mode=WAL``: readers (estimates, health checks) never block the writer and vice versa;
* ``synchronous=FULL``: the WAL is fsynced at every commit, so a report acknowledged with 200 survives a crash
  of the process or the machine (NORMAL would only survive a process crash);
* ``busy_timeout``: writers from several gunicorn workers queue for the write lock instead of failing;
* ``BEGIN IMMEDIATE`` for every write transaction, so the lock is taken up front and a transaction never has to
  be retried half-way through.

Everything the API and the CLI need goes through :class:`Storage`; a server database backend (PostgreSQL) only
has to provide the same methods.  Stored per report: report_id, campaign, version, fingerprint, payload, day
(UTC date).  Nothing else.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import secrets
import shutil
import sqlite3
import uuid
import warnings
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlite_utils

import estimators
from client_sdk.errors import PrivacyWarning
from client_sdk.spec import Spec, canonical_json, load_spec

ROLES = ("ingest", "admin")
KEY_PREFIX = "ldp_"
SQL_VARIABLES_PER_QUERY = 900  # stays below SQLite's historical 999 limit
CACHE_KIB = 64 * 1024  # page cache per connection: keeps the report_id index hot for random-UUID inserts
# Fewer, larger checkpoints: index pages that several commits touch are copied to the database file once.
WAL_AUTOCHECKPOINT_PAGES = 16384


class StorageError(Exception):
    "Base class of the storage errors"


class CampaignNotFound(StorageError):
    "No campaign (or campaign version) with that name"


class VersionConflict(StorageError):
    "A spec asked for a version other than the next free one"


class RateLimited(StorageError):
    "The key's token bucket is empty; ``retry_after`` says for how many seconds"

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"rate limit exceeded; retry after {retry_after:.2f} s")
        self.retry_after = retry_after


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


@dataclass
class ReportGroup:
    "Validated reports of one campaign version, with their aggregate computed before the write lock is taken"

    campaign: CampaignVersion
    report_ids: list[str]
    payloads: list[Any]
    payload_texts: list[str]
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


class Storage:
    "A connection to the collector database; cheap to open, one per request or per command"

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 10_000) -> None:
        self.path = Path(path)
        self.conn = sqlite3.connect(str(self.path), isolation_level=None, timeout=busy_timeout_ms / 1000)
        self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        self.conn.execute("PRAGMA synchronous = FULL")
        self.conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
        self.conn.execute(f"PRAGMA cache_size = {-CACHE_KIB}")
        self.db = sqlite_utils.Database(self.conn)
        self._lock_fd: int | None = None
        self._lock_closer: Any = None

    def close(self) -> None:
        self.conn.close()
        if self._lock_closer is not None:
            self._lock_closer()  # closes the lock file once, also when the object is garbage collected

    def __enter__(self) -> Storage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schema and transactions ------------------------------------------------------------------------------
    def migrate(self) -> None:
        "Create the tables if they are missing and switch the file to WAL; idempotent"
        self.conn.execute("PRAGMA journal_mode = WAL")
        db = self.db
        db["campaigns"].create({"name": str, "version": int, "fingerprint": str, "spec": str, "created_day": str},
                               pk=("name", "version"), not_null=["fingerprint", "spec"], if_not_exists=True)
        db["campaigns"].create_index(["name", "fingerprint"], unique=True, if_not_exists=True)
        # report_id is stored as its 16 bytes: the random-key index is half the size and inserts ~30% faster
        db["reports"].create({"report_id": bytes, "campaign": str, "version": int, "fingerprint": str,
                              "payload": str, "day": str}, pk="report_id",
                             not_null=["campaign", "version", "fingerprint", "payload", "day"], if_not_exists=True)
        db["aggregates"].create({"campaign": str, "version": int, "day": str, "n": int, "counts": str},
                                pk=("campaign", "version", "day"), not_null=["n", "counts"], if_not_exists=True)
        db["api_keys"].create({"key_hash": str, "key_id": str, "role": str, "label": str, "created_day": str},
                              pk="key_hash", not_null=["role"], if_not_exists=True)
        db["rate_buckets"].create({"key_hash": str, "tokens": float, "updated": float}, pk="key_hash",
                                  if_not_exists=True)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception.

        Writers first queue on an flock of ``<db>.writer-lock``: SQLite's own busy handler polls with sleeps of
        up to 100 ms, which wastes most of the time when several gunicorn workers write; a blocking flock hands
        over as soon as the lock is released.  The busy timeout still covers writers that do not take the flock."""
        if self._lock_fd is None:
            self._lock_fd = os.open(f"{self.path}.writer-lock", os.O_RDWR | os.O_CREAT, 0o600)
            self._lock_closer = weakref.finalize(self, os.close, self._lock_fd)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def check(self) -> dict:
        "Raise unless the database answers; report free disk space next to it"
        self.conn.execute("SELECT count(*) FROM campaigns").fetchone()
        return {"free_bytes": shutil.disk_usage(self.path.resolve().parent).free}

    # -- campaigns --------------------------------------------------------------------------------------------
    def create_campaign(self, source: Any, day: str) -> tuple[CampaignVersion, bool]:
        """Store a spec as the next version of its campaign; (version, created).

        A spec identical (same fingerprint) to an existing version returns that version unchanged, so a retried
        create is harmless.  A ``version`` in the spec must be the next free number."""
        spec = load_spec(source)
        requested = source.get("version") if isinstance(source, dict) else None
        with self.transaction() as conn:
            existing = self.find_version(spec.name, spec.fingerprint)
            if existing is not None:
                return existing, False
            row = conn.execute("SELECT max(version) FROM campaigns WHERE name = ?", (spec.name,)).fetchone()
            next_version = (row[0] or 0) + 1
            if requested is not None and requested != next_version:
                raise VersionConflict(f"version must be {next_version}, the next free version of {spec.name!r}")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyWarning)
                spec = load_spec({**spec.to_dict(derived=False), "version": next_version})
            conn.execute("INSERT INTO campaigns (name, version, fingerprint, spec, created_day) VALUES (?, ?, ?, ?, ?)",
                         (spec.name, next_version, spec.fingerprint, spec.to_json(), day))
        return CampaignVersion(spec.name, next_version, spec.fingerprint, spec, day), True

    def list_campaigns(self) -> list[CampaignVersion]:
        "The latest version of every campaign, by name"
        rows = self.conn.execute(
            "SELECT name, version, fingerprint, spec, created_day FROM campaigns c WHERE version = "
            "(SELECT max(version) FROM campaigns WHERE name = c.name) ORDER BY name").fetchall()
        return [_campaign(row) for row in rows]

    def campaign_versions(self, name: str) -> list[CampaignVersion]:
        rows = self.conn.execute("SELECT name, version, fingerprint, spec, created_day FROM campaigns "
                                 "WHERE name = ? ORDER BY version", (name,)).fetchall()
        return [_campaign(row) for row in rows]

    def get_campaign(self, name: str, version: int | None = None) -> CampaignVersion:
        "One version (the latest by default); CampaignNotFound otherwise"
        if version is None:
            row = self.conn.execute("SELECT name, version, fingerprint, spec, created_day FROM campaigns "
                                    "WHERE name = ? ORDER BY version DESC LIMIT 1", (name,)).fetchone()
        else:
            row = self.conn.execute("SELECT name, version, fingerprint, spec, created_day FROM campaigns "
                                    "WHERE name = ? AND version = ?", (name, version)).fetchone()
        if row is None:
            raise CampaignNotFound(f"no campaign {name!r}" + (f" version {version}" if version else ""))
        return _campaign(row)

    def find_version(self, name: str, fingerprint: str) -> CampaignVersion | None:
        row = self.conn.execute("SELECT name, version, fingerprint, spec, created_day FROM campaigns "
                                "WHERE name = ? AND fingerprint = ?", (name, fingerprint)).fetchone()
        return _campaign(row) if row else None

    # -- reports and aggregates -------------------------------------------------------------------------------
    def insert_reports(self, groups: Sequence[ReportGroup], day: str, *, key_hash: str | None = None,
                       rate: RateRule | None = None, now: float = 0.0) -> InsertResult:
        """Insert validated reports and update their aggregates in one transaction.

        Report ids must be unique across ``groups``.  Ids already stored are duplicates: neither inserted nor
        counted again.  With ``rate`` the key's token is taken in the same transaction (RateLimited rolls back)."""
        result = InsertResult()
        with self.transaction():
            if rate is not None and key_hash is not None:
                self._take_token(key_hash, rate, now)
            for group in groups:
                accepted = self._insert_group(group, day, result)
                result.accepted += accepted
        return result

    def _insert_group(self, group: ReportGroup, day: str, result: InsertResult) -> int:
        """Insert one group; the usual case (no duplicates) costs one executemany.

        INSERT OR IGNORE runs inside a savepoint; if it inserted fewer rows than it was given, some ids were
        already stored: roll back to the savepoint, find them, and insert and aggregate only the new reports."""
        c, conn = group.campaign, self.conn
        insert = ("INSERT OR IGNORE INTO reports (report_id, campaign, version, fingerprint, payload, day) "
                  "VALUES (?, ?, ?, ?, ?, ?)")
        conn.execute("SAVEPOINT report_group")
        before = conn.total_changes
        conn.executemany(insert, [(_id_bytes(report_id), c.name, c.version, c.fingerprint, text, day)
                                  for report_id, text in zip(group.report_ids, group.payload_texts)])
        ids, payloads, aggregate = group.report_ids, group.payloads, group.aggregate
        if conn.total_changes - before != len(ids):
            conn.execute("ROLLBACK TO report_group")
            existing = self._existing_ids(ids)
            keep = [i for i, report_id in enumerate(ids) if report_id not in existing]
            ids, payloads = [ids[i] for i in keep], [payloads[i] for i in keep]
            texts = [group.payload_texts[i] for i in keep]
            result.duplicate += len(existing)
            result.duplicate_ids |= existing
            aggregate = None
            before = conn.total_changes
            conn.executemany(insert, [(_id_bytes(report_id), c.name, c.version, c.fingerprint, text, day)
                                      for report_id, text in zip(ids, texts)])
            if conn.total_changes - before != len(ids):
                raise StorageError("report insert count mismatch; transaction rolled back")
        conn.execute("RELEASE report_group")
        if ids:
            if aggregate is None:
                aggregate = estimators.aggregate(c.spec, payloads)
            self._add_to_aggregate(c, day, aggregate)
        return len(ids)

    def _existing_ids(self, report_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(report_ids), SQL_VARIABLES_PER_QUERY):
            chunk = [_id_bytes(report_id) for report_id in report_ids[start:start + SQL_VARIABLES_PER_QUERY]]
            marks = ",".join("?" * len(chunk))
            found.update(_id_text(r[0]) for r in self.conn.execute(
                f"SELECT report_id FROM reports WHERE report_id IN ({marks})", chunk))
        return found

    def _add_to_aggregate(self, campaign: CampaignVersion, day: str, aggregate: estimators.Aggregate) -> None:
        row = self.conn.execute("SELECT n, counts FROM aggregates WHERE campaign = ? AND version = ? AND day = ?",
                                (campaign.name, campaign.version, day)).fetchone()
        if row is not None:
            aggregate = _aggregate(campaign, row[0], row[1]).merge(aggregate)
        data = aggregate.to_dict()
        self.conn.execute("INSERT OR REPLACE INTO aggregates (campaign, version, day, n, counts) "
                          "VALUES (?, ?, ?, ?, ?)",
                          (campaign.name, campaign.version, day, data["n"], json.dumps(data["counts"])))

    def aggregates_by_day(self, campaign: CampaignVersion, since: str | None = None,
                          until: str | None = None) -> list[tuple[str, estimators.Aggregate]]:
        "The stored aggregate of every day in [since, until] that has reports, in day order"
        rows = self.conn.execute(
            "SELECT day, n, counts FROM aggregates WHERE campaign = ? AND version = ? AND day >= ? AND day <= ? "
            "ORDER BY day", (campaign.name, campaign.version, since or "", until or "9999-12-31")).fetchall()
        return [(day, _aggregate(campaign, n, counts)) for day, n, counts in rows]

    def read_aggregate(self, campaign: CampaignVersion, since: str | None = None,
                       until: str | None = None) -> estimators.Aggregate:
        "The merged aggregate over [since, until] (empty if there are no reports)"
        total = estimators.Aggregate.empty(campaign.spec)
        for _, aggregate in self.aggregates_by_day(campaign, since, until):
            total = total.merge(aggregate)
        return total

    def iter_reports(self, name: str | None = None, version: int | None = None) -> Iterator[dict]:
        "Raw stored reports (payload decoded), optionally of one campaign and version"
        sql = "SELECT report_id, campaign, version, fingerprint, payload, day FROM reports"
        clauses, args = [], []
        if name is not None:
            clauses.append("campaign = ?")
            args.append(name)
        if version is not None:
            clauses.append("version = ?")
            args.append(version)
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
        for report_id, campaign, ver, fingerprint, payload, day in self.conn.execute(sql, args):
            yield {"report_id": _id_text(report_id), "campaign": campaign, "version": ver, "fingerprint": fingerprint,
                   "payload": json.loads(payload), "day": day}

    def count_reports(self, name: str | None = None) -> int:
        if name is None:
            return self.conn.execute("SELECT count(*) FROM reports").fetchone()[0]
        return self.conn.execute("SELECT count(*) FROM reports WHERE campaign = ?", (name,)).fetchone()[0]

    def rebuild_aggregates(self, name: str | None = None) -> int:
        "Recompute the aggregates of one or every campaign from the raw reports; the number of rows written"
        names = [name] if name is not None else [c.name for c in self.list_campaigns()]
        written = 0
        with self.transaction() as conn:
            for campaign_name in names:
                conn.execute("DELETE FROM aggregates WHERE campaign = ?", (campaign_name,))
                for campaign in self.campaign_versions(campaign_name):
                    days = [r[0] for r in conn.execute("SELECT DISTINCT day FROM reports WHERE campaign = ? AND "
                                                       "version = ? ORDER BY day", (campaign.name, campaign.version))]
                    for day in days:
                        payloads = [json.loads(r[0]) for r in conn.execute(
                            "SELECT payload FROM reports WHERE campaign = ? AND version = ? AND day = ?",
                            (campaign.name, campaign.version, day))]
                        self._add_to_aggregate(campaign, day, estimators.aggregate(campaign.spec, payloads))
                        written += 1
        return written

    # -- keys and rate limits ---------------------------------------------------------------------------------
    def create_key(self, role: str, day: str, label: str = "") -> tuple[str, ApiKey]:
        "A new random key (returned once, in clear) and its stored record"
        if role not in ROLES:
            raise ValueError(f"role must be one of {list(ROLES)}")
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        record = ApiKey(hash_key(key), hash_key(key)[:12], role, label, day)
        with self.transaction() as conn:
            conn.execute("INSERT INTO api_keys (key_hash, key_id, role, label, created_day) VALUES (?, ?, ?, ?, ?)",
                         (record.key_hash, record.key_id, role, label, day))
        return key, record

    def find_key(self, key: str) -> ApiKey | None:
        row = self.conn.execute("SELECT key_hash, key_id, role, label, created_day FROM api_keys WHERE key_hash = ?",
                                (hash_key(key),)).fetchone()
        return ApiKey(*row) if row else None

    def list_keys(self) -> list[ApiKey]:
        return [ApiKey(*row) for row in self.conn.execute(
            "SELECT key_hash, key_id, role, label, created_day FROM api_keys ORDER BY created_day, key_id")]

    def revoke_key(self, key_id: str) -> bool:
        with self.transaction() as conn:
            deleted = conn.execute("DELETE FROM api_keys WHERE key_id = ?", (key_id,)).rowcount
            conn.execute("DELETE FROM rate_buckets WHERE key_hash LIKE ?", (key_id + "%",))
        return deleted > 0

    def peek_tokens(self, key_hash: str, rate: RateRule, now: float) -> float:
        "Seconds until the key may send again (0 if it may now); reads only, takes no lock"
        row = self.conn.execute("SELECT tokens, updated FROM rate_buckets WHERE key_hash = ?", (key_hash,)).fetchone()
        tokens, window = _refill(row, rate, now)
        return 0.0 if tokens >= 1 else _wait(tokens, window, rate, now)

    def take_token(self, key_hash: str, rate: RateRule, now: float) -> None:
        "Take one token in its own transaction; RateLimited if the bucket is empty"
        with self.transaction():
            self._take_token(key_hash, rate, now)

    def _take_token(self, key_hash: str, rate: RateRule, now: float) -> None:
        row = self.conn.execute("SELECT tokens, updated FROM rate_buckets WHERE key_hash = ?", (key_hash,)).fetchone()
        tokens, window = _refill(row, rate, now)
        if tokens < 1:
            raise RateLimited(_wait(tokens, window, rate, now))
        # Stored: a token count (a function of request counts and window starts only) and the window's start.
        self.conn.execute("INSERT OR REPLACE INTO rate_buckets (key_hash, tokens, updated) VALUES (?, ?, ?)",
                          (key_hash, tokens - 1, window))

    def table_rows(self, table: str) -> list[dict]:
        "Every row of a table (tests and audits)"
        return list(self.db[table].rows)


def hash_key(key: str) -> str:
    "SHA-256 of a key; keys carry 256 random bits, so a fast hash is enough (no password stretching needed)"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)  # warned once, when the campaign was created
        spec = load_spec(spec_json)
    return CampaignVersion(name, version, fingerprint, spec, day)


def _id_bytes(report_id: str) -> bytes:
    "The 16 bytes of a (validated, lower-case hex) UUID string"
    return bytes.fromhex(report_id.replace("-", ""))


def _id_text(raw: bytes) -> str:
    return str(uuid.UUID(bytes=raw))


def _aggregate(campaign: CampaignVersion, n: int, counts: str) -> estimators.Aggregate:
    return estimators.Aggregate.from_dict({"mechanism": campaign.spec.mechanism, "fingerprint": campaign.fingerprint,
                                           "n": n, "counts": json.loads(counts)})


def payload_text(payload: Any) -> str:
    "The stored form of a payload: canonical JSON"
    return canonical_json(payload)
