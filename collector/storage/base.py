"""What every storage backend shares (:class:`StorageBase`), and the rate bucket and key arithmetic."""

from __future__ import annotations

import hashlib
import json
import math
import secrets
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from client_sdk.errors import PrivacyWarning
from client_sdk.spec import NAME_PATTERN, load_spec

from ..errors import (
    CampaignClosed,
    CampaignNotFound,
    RateLimited,
    VersionConflict,
)
from ..report_codec import decode_payload, encode_payloads, tagged_bytes
from .models import KEY_PREFIX, RATE_WINDOW_SECONDS, ROLES, ApiKey, CampaignVersion, InsertResult, RateRule, ReportGroup
from .rows import (
    _aggregate,
    _campaign,
    _day_number,
    _day_text,
    _id_text,
    _ids_bytes,
)

if TYPE_CHECKING:  # imported where used: numpy loads with the first aggregate, not with the storage
    import estimators


SQL_VARIABLES_PER_QUERY = 900  # stays below SQLite's historical 999 limit
KEY_COLUMNS = "key_hash, key_id, role, label, created_day, expires_day, last_used_day, is_public, campaigns"
# A report id is a duplicate if stored on the same day or on one of the DEDUP_DAYS days before: the SDK queue
# keeps a report at most 7 days (its max_age_seconds), so a retry cannot come later than that.
DEDUP_DAYS = 8
REBUILD_CHUNK = 20_000  # reports decoded and aggregated at a time by rebuild_aggregates


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
    dialect = ""  # "sqlite" or "postgresql": the few statements written per backend (collector.distributed.store)

    @property
    def location(self) -> str:
        "The database file or URL (a key for per-database caches)"
        raise NotImplementedError

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

    def _run_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        "Run a statement once per row of parameters"
        if rows:
            with self._connection() as conn:
                conn.cursor().executemany(self._sql(sql), rows)

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
                       rate: RateRule | None = None, now: float = 0.0,
                       within: Callable[[StorageBase, InsertResult], None] | None = None) -> InsertResult:
        """Insert validated reports and update their aggregates in one transaction.

        Report ids must be unique across ``groups``.  Ids already stored (on ``day`` or one of the DEDUP_DAYS
        days before it) are duplicates: neither inserted nor counted again.  With ``rate`` the key's token is
        taken in the same transaction (RateLimited rolls back).  ``within(storage, result)`` runs in the transaction
        after the inserts (a shuffled batch's ledger record), its statements on ``storage`` (the connection that
        holds the transaction: another thread's under SQLite's group commit); what it raises rolls them back."""
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
            if within is not None:
                within(self, result)
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
            # imported here: numpy and the estimators (+250 ms) load with the first aggregate, not with a key command
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
        # imported here: numpy and the estimators (+250 ms) load with the first aggregate, not with a key command
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

    def report_totals(self) -> dict[str, tuple[int, str]]:
        "Per campaign with stored aggregates: (reports so far, last day with reports), in one query over the sums"
        rows = self._all("SELECT campaign, coalesce(sum(n), 0), max(day) FROM aggregates GROUP BY campaign")
        return {str(name): (int(n), str(day)) for name, n, day in rows}

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
                # imported here: numpy and the estimators (+250 ms) with the first aggregate, not a key command
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

