"""The tables of a distributed campaign's two aggregators, in the aggregator's own collector database (SQLite or
PostgreSQL), and every statement on them: the leader's and helper's modules call the methods here and write no SQL.

Both roles:

* ``dist_hpke_keys``     the aggregator's HPKE key pairs (config id, raw X25519 private key, creation day, and since
                         schema 2 ``seq``: the order of rotation, newest highest; ``hpke_keys`` has the overlap rule)
* ``dist_campaigns``     per campaign version (name, fingerprint): the role, the Prio3 verify key, and on the leader
                         the helper's URL and HPKE config (the spec itself is in ``campaigns``, as for local ones)
* ``dist_agg_shares``    per batch: the aggregator's aggregate share (encoded field vector) and its report count
* ``dist_batches``       per batch: open / closed (collection started) / collected, and the helper's stored answer
                         (``seed_own``, ``seed_commitment``: the coin subset's seeds of the device-coin noise, no
                         longer written; ``dist_coin_shares`` of databases made before stays, unused)

Leader only: ``dist_reports`` (each accepted upload: its public share, the leader's opened input share, the helper's
sealed share, its job and state; the shares are emptied once the report is aggregated or rejected, the id stays
for replay checks and the batch checksum, the job goes once the batch is collected: ``scrub_batch``),
``dist_jobs`` (aggregation jobs, each with the lease of the driver running it), ``dist_rejections`` (counts by
reason) and ``dist_releases``.  Helper only: ``dist_helper_jobs`` (each
job's request digest and stored answer) and ``dist_helper_seen`` (every report id the helper has processed, with
its batch and outcome).

The DDL is ``collector.distributed.schema``, the prio3 kind's migrations, which each backend's ``migrate()``
applies. The statements are written once in the SQL both backends accept (the storage's ``?`` placeholders); where
PostgreSQL's row locks stand in for SQLite's single writer they are one suffix (``FOR UPDATE``, ``FOR SHARE``,
``SKIP LOCKED``) that SQLite leaves out. Several processes may share one PostgreSQL database: every
read-modify-write here first locks the row it modifies (a batch's aggregate share, a batch's state, a job), so two
processes serialize on it.

No time of day is stored except a job's lease expiry (a job, not a report: it says nothing about any device).
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..storage import StorageBase, restrict_database
from ..storage.day_scrub import delete_securely, rewrite_in_key_order, truncate_wal
from . import schema  # noqa: F401  (registers the tables' migrations, which migrate() applies)

BatchKey = tuple[str, str, str]  # (campaign name, fingerprint, batch day)
IDS_PER_QUERY = 900  # report ids per IN (...) list: below SQLite's historical 999 variables

FAILPOINT_ENV = "LDP_FAILPOINT"
DIST_REPORT_COLUMNS = ("report_id", "campaign", "fingerprint", "batch", "public_share", "leader_share", "helper_share",
                       "job_id", "state", "error")
HELPER_SEEN_COLUMNS = ("report_id", "campaign", "fingerprint", "batch", "job_id", "valid")
# rewritten by a scrub on PostgreSQL (dist_agg_shares: without the dead versions a job's update left), and locked in
# this order
SCRUBBED_TABLES = ("dist_agg_shares", "dist_reports", "dist_jobs", "dist_helper_seen", "dist_helper_jobs")


def failpoint(name: str) -> None:
    """Crash tests: when ``LDP_FAILPOINT`` names this point, SIGKILL the aggregator's whole process group here (a
    server started in its own session: the gunicorn master and its workers), as a power cut would"""
    if os.environ.get(FAILPOINT_ENV) == name:
        os.killpg(os.getpgrp(), signal.SIGKILL)


@dataclass(frozen=True)
class DistCampaign:
    "One distributed campaign version as this aggregator knows it"

    name: str
    fingerprint: str
    role: str
    verify_key: bytes
    helper_url: str | None
    helper_hpke_config: dict | None  # one config (databases of before rotation) or ``helper_config_block``'s
    state: str

    def helper_configs(self) -> list[dict]:
        "The helper's HPKE configs as this leader last read them (``GET /v1/hpke_config``), newest first"
        block = self.helper_hpke_config
        if block is None:
            return []
        return list(block["published"]) if "published" in block else [block]

    def helper_retired_ids(self) -> set[int]:
        "Config ids the helper published before and no longer does (retired: its reports are refused by name)"
        return set((self.helper_hpke_config or {}).get("retired_ids", []))


def helper_config_block(published: list[dict], before: DistCampaign | None) -> dict:
    "What a leader stores of the helper's configs: the published ones, and every id it stopped publishing"
    ids = {config.get("id") for config in published}
    retired = set() if before is None else before.helper_retired_ids() | {
        config["id"] for config in before.helper_configs() if config.get("id") not in ids}
    return {"published": published, "retired_ids": sorted(retired - ids)}


@dataclass(frozen=True)
class StoredKey:
    "One HPKE key pair of this aggregator as stored"

    config_id: int
    private_key: bytes
    created_day: str
    seq: int


@dataclass(frozen=True)
class StoredReport:
    "One accepted upload on the leader"

    report_id: bytes
    public_share: bytes
    leader_share: bytes
    helper_share: dict



@dataclass(frozen=True)
class ClaimedJob:
    "A pending aggregation job this driver holds the lease of"

    job_id: str
    key: BatchKey


class DistStore:
    "The distributed tables over a collector :class:`~collector.storage.StorageBase` (SQLite or PostgreSQL)"

    def __init__(self, storage: StorageBase) -> None:
        self.storage = storage
        postgres = storage.dialect == "postgresql"
        self._for_update = " FOR UPDATE" if postgres else ""  # SQLite: the transaction holds the only write lock
        self._for_share = " FOR SHARE" if postgres else ""
        self._skip_locked = " FOR UPDATE SKIP LOCKED" if postgres else ""

    @property
    def location(self) -> str:
        "The database (a key for per-database caches)"
        return self.storage.location

    @contextmanager
    def transaction(self) -> Iterator[None]:
        "One transaction of the storage: every method called inside runs in it"
        with self.storage.transaction():
            yield

    def migrate(self) -> None:
        """Bring the database (distributed tables included) to the latest schema: the storage's migrations.  The
        database holds this aggregator's HPKE private key and the verify keys: a SQLite file is made 0600."""
        path = getattr(self.storage, "path", None)
        if path is not None:
            restrict_database(path)
        self.storage.migrate()

    def _all(self, sql: str, params: Sequence[object] = ()) -> list:
        return self.storage._all(sql, params)

    def _one(self, sql: str, params: Sequence[object] = ()) -> Any:
        return self.storage._one(sql, params)

    def _in_chunks(self, sql: str, ids: Sequence[bytes], params: Sequence[object] = ()) -> set[bytes]:
        "The first column of ``sql`` (``params``, then one ``IN ({marks})``) over every chunk of ``ids``"
        found: set[bytes] = set()
        for start in range(0, len(ids), IDS_PER_QUERY):
            chunk = list(ids[start:start + IDS_PER_QUERY])
            found |= {bytes(r[0]) for r in self._all(sql.format(marks=",".join("?" * len(chunk))), (*params, *chunk))}
        return found

    def _update_ids(self, sql: str, params: Sequence[object], ids: Sequence[bytes]) -> None:
        "Run ``sql`` (``params``, then one ``IN ({marks})``) over every chunk of ``ids``: one statement per chunk"
        for start in range(0, len(ids), IDS_PER_QUERY):
            chunk = list(ids[start:start + IDS_PER_QUERY])
            self.storage._run(sql.format(marks=",".join("?" * len(chunk))), (*params, *chunk))

    # -- HPKE keys ----------------------------------------------------------------------------------------------
    def hpke_keys(self) -> list[StoredKey]:
        "Every key pair of this aggregator, newest (highest ``seq``) first"
        rows = self._all("SELECT config_id, private_key, created_day, seq FROM dist_hpke_keys ORDER BY seq DESC, "
                         "config_id")
        return [StoredKey(int(r[0]), bytes(r[1]), r[2], int(r[3])) for r in rows]

    def hpke_keys_version(self) -> tuple[int, int]:
        "(number of keys, highest seq): changes with every rotation, read to know a cached key list is current"
        row = self._one("SELECT count(*), coalesce(max(seq), -1) FROM dist_hpke_keys")
        return int(row[0]), int(row[1])

    def add_hpke_key(self, config_id: int, private_key: bytes, day: str, *, first: bool = True) -> bool:
        """Store a key pair as the newest; with ``first``, only if there is none yet (another process won the race
        of the first start).  False if not stored: ``first`` and a key exists, or ``config_id`` is taken."""
        with self.transaction():
            self._lock_name("dist_hpke_keys")
            if first and self._one("SELECT 1 FROM dist_hpke_keys") is not None:
                return False
            if self._one("SELECT 1 FROM dist_hpke_keys WHERE config_id = ?", (config_id,)):
                return False
            seq = self._one("SELECT coalesce(max(seq), -1) + 1 FROM dist_hpke_keys")[0]
            self.storage._run("INSERT INTO dist_hpke_keys (config_id, private_key, created_day, seq) "
                              "VALUES (?, ?, ?, ?)", (config_id, private_key, day, seq))
            return True

    def _lock_name(self, name: str) -> None:
        "Serialize the transactions that take this name until they end (SQLite's write lock does already)"
        if self.storage.dialect == "postgresql":
            self._one("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (name,))

    # -- campaigns ----------------------------------------------------------------------------------------------
    def campaign(self, name: str, fingerprint: str) -> DistCampaign | None:
        row = self._one("SELECT name, fingerprint, role, verify_key, helper_url, helper_hpke_config, state "
                        "FROM dist_campaigns WHERE name = ? AND fingerprint = ?", (name, fingerprint))
        if row is None:
            return None
        r = list(row)
        return DistCampaign(r[0], r[1], r[2], bytes(r[3]), r[4], json.loads(r[5]) if r[5] else None, r[6])

    def leader_campaigns(self) -> list[DistCampaign]:
        "The ready campaigns this aggregator leads"
        rows = self._all("SELECT name, fingerprint FROM dist_campaigns WHERE role = 'leader' AND state = 'ready' "
                         "ORDER BY name, fingerprint")
        return [c for c in (self.campaign(r[0], r[1]) for r in rows) if c is not None]

    def put_campaign(self, campaign: DistCampaign) -> None:
        self.storage._run(
            "INSERT INTO dist_campaigns (name, fingerprint, role, verify_key, helper_url, helper_hpke_config, "
            "state) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name, fingerprint) DO UPDATE SET "
            "helper_url = excluded.helper_url, helper_hpke_config = excluded.helper_hpke_config, "
            "state = excluded.state",
            (campaign.name, campaign.fingerprint, campaign.role, campaign.verify_key, campaign.helper_url,
             json.dumps(campaign.helper_hpke_config) if campaign.helper_hpke_config else None, campaign.state))

    # -- batches ------------------------------------------------------------------------------------------------
    def batch_state(self, key: BatchKey) -> str:
        row = self._one("SELECT state FROM dist_batches WHERE campaign = ? AND fingerprint = ? AND batch = ?", key)
        return row[0] if row else "open"

    def lock_batch(self, key: BatchKey, *, exclusive: bool) -> str:
        """The batch's state, its row locked until the transaction ends: shared by uploads (they add reports to an
        open batch), exclusive to change the state (so no upload is half-way into a batch being closed)"""
        self.storage._run("INSERT INTO dist_batches (campaign, fingerprint, batch, state) VALUES (?, ?, ?, 'open') "
                          "ON CONFLICT (campaign, fingerprint, batch) DO NOTHING", key)
        row = self._one("SELECT state FROM dist_batches WHERE campaign = ? AND fingerprint = ? AND batch = ?"
                        + (self._for_update if exclusive else self._for_share), key)
        return row[0]

    def batch_row(self, key: BatchKey) -> tuple[str, bytes | None, bytes | None, str | None]:
        row = self._one("SELECT state, seed_own, seed_commitment, answer FROM dist_batches WHERE campaign = ? "
                        "AND fingerprint = ? AND batch = ?", key)
        if row is None:
            return "open", None, None, None
        r = list(row)
        return r[0], _blob(r[1]), _blob(r[2]), r[3]

    def set_batch(self, key: BatchKey, state: str, *, answer: str | None = None) -> None:
        self.storage._run("INSERT INTO dist_batches (campaign, fingerprint, batch, state) VALUES (?, ?, ?, ?) "
                          "ON CONFLICT (campaign, fingerprint, batch) DO UPDATE SET state = excluded.state",
                          (*key, state))
        if answer is not None:
            self.storage._run("UPDATE dist_batches SET answer = ? WHERE campaign = ? AND fingerprint = ? AND "
                              "batch = ?", (answer, *key))

    # -- aggregate shares ---------------------------------------------------------------------------------------
    def agg_share(self, key: BatchKey) -> tuple[int, bytes | None]:
        row = self._one("SELECT report_count, share FROM dist_agg_shares WHERE campaign = ? AND fingerprint = ? "
                        "AND batch = ?", key)
        return _share(row)

    def lock_agg_share(self, key: BatchKey) -> tuple[int, bytes | None]:
        """The batch's aggregate share, its row locked until the transaction ends: every transaction that adds to
        a batch takes this lock first, so its later reads (job done? report seen?) see the last writer's commit"""
        self.storage._run("INSERT INTO dist_agg_shares (campaign, fingerprint, batch, report_count, share) "
                          "VALUES (?, ?, ?, 0, ?) ON CONFLICT (campaign, fingerprint, batch) DO NOTHING",
                          (*key, b""))
        return _share(self._one("SELECT report_count, share FROM dist_agg_shares WHERE campaign = ? AND "
                                "fingerprint = ? AND batch = ?" + self._for_update, key))

    def put_agg_share(self, key: BatchKey, report_count: int, share: bytes) -> None:
        self.storage._run("INSERT INTO dist_agg_shares (campaign, fingerprint, batch, report_count, share) "
                          "VALUES (?, ?, ?, ?, ?) ON CONFLICT (campaign, fingerprint, batch) DO UPDATE SET "
                          "report_count = excluded.report_count, share = excluded.share", (*key, report_count, share))

    # -- leader: reports and rejections -------------------------------------------------------------------------
    def count_rejections(self, key: BatchKey, reasons: Mapping[str, int]) -> None:
        self.storage._run_many("INSERT INTO dist_rejections (campaign, fingerprint, batch, reason, count) "
                               "VALUES (?, ?, ?, ?, ?) ON CONFLICT (campaign, fingerprint, batch, reason) DO UPDATE "
                               "SET count = dist_rejections.count + excluded.count",
                               [(*key, str(r), c) for r, c in reasons.items() if c])

    def rejections(self, key: BatchKey) -> dict[str, int]:
        rows = self._all("SELECT reason, count FROM dist_rejections WHERE campaign = ? AND fingerprint = ? "
                         "AND batch = ? ORDER BY reason", key)
        return {r[0]: int(r[1]) for r in rows}

    def existing_report_ids(self, ids: Sequence[bytes]) -> set[bytes]:
        return self._in_chunks("SELECT report_id FROM dist_reports WHERE report_id IN ({marks})", ids)

    def insert_reports(self, key: BatchKey, rows: Sequence[tuple[bytes, bytes, bytes, str]]) -> int:
        """Store accepted reports (id, public share, leader's input share, helper's sealed share as JSON) of one
        batch as pending, skipping ids stored already; how many were new"""
        if not rows:
            return 0
        if self.storage.dialect == "postgresql":  # one statement, whatever the number of reports; shares in binary
            columns = [[row[i] for row in rows] for i in range(4)]
            return len(self._all(
                "INSERT INTO dist_reports (report_id, campaign, fingerprint, batch, public_share, leader_share, "
                "helper_share, state) SELECT r, ?, ?, ?, p, l, h, 'pending' FROM unnest(%b::bytea[], %b::bytea[], "
                "%b::bytea[], ?::text[]) AS t(r, p, l, h) ON CONFLICT (report_id) DO NOTHING RETURNING 1",
                (*key, *columns)))
        conn = self.storage.conn  # type: ignore[attr-defined]
        before = conn.total_changes
        self.storage._run_many("INSERT INTO dist_reports (report_id, campaign, fingerprint, batch, public_share, "
                               "leader_share, helper_share, state) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending') "
                               "ON CONFLICT (report_id) DO NOTHING",
                               [(row[0], *key, *row[1:]) for row in rows])
        return int(conn.total_changes - before)

    def report_states(self, key: BatchKey) -> dict[str, int]:
        rows = self._all("SELECT state, count(*) FROM dist_reports WHERE campaign = ? AND fingerprint = ? AND "
                         "batch = ? GROUP BY state", key)
        return {r[0]: int(r[1]) for r in rows}

    def aggregated_ids(self, key: BatchKey) -> list[bytes]:
        rows = self._all("SELECT report_id FROM dist_reports WHERE campaign = ? AND fingerprint = ? AND "
                         "batch = ? AND state = 'aggregated' ORDER BY report_id", key)
        return [bytes(r[0]) for r in rows]

    def pending_batches(self) -> list[BatchKey]:
        "Batches with reports that are not yet in a job, or with jobs not yet done"
        rows = self._all(
            "SELECT DISTINCT campaign, fingerprint, batch FROM dist_reports WHERE state = 'pending' AND job_id IS NULL "
            "UNION SELECT DISTINCT campaign, fingerprint, batch FROM dist_jobs WHERE state = 'pending' ORDER BY 3, 1")
        return [(r[0], r[1], r[2]) for r in rows]

    def batch_unfinished(self, key: BatchKey) -> bool:
        "Whether the batch has reports not yet in a job (another process may be creating it) or jobs not yet done"
        where, params = _batch_filter(key)
        row = self._one(f"SELECT 1 FROM dist_reports WHERE state = 'pending' AND job_id IS NULL{where} UNION ALL "
                        f"SELECT 1 FROM dist_jobs WHERE state = 'pending'{where} LIMIT 1", (*params, *params))
        return row is not None

    # -- leader: aggregation jobs -------------------------------------------------------------------------------
    def create_jobs(self, key: BatchKey, job_size: int, new_id: Callable[[], str]) -> int:
        """Put the batch's pending reports that are in no job into new jobs of ``job_size``; how many jobs.  On
        PostgreSQL the reports another process is putting into a job right now are skipped (SKIP LOCKED)."""
        jobs = 0
        with self.transaction():
            ids = [bytes(r[0]) for r in self._all(
                "SELECT report_id FROM dist_reports WHERE campaign = ? AND fingerprint = ? AND batch = ? AND "
                "state = 'pending' AND job_id IS NULL ORDER BY report_id" + self._skip_locked, key)]
            for start in range(0, len(ids), job_size):
                job_id = new_id()
                self.storage._run("INSERT INTO dist_jobs (job_id, campaign, fingerprint, batch, state) "
                                  "VALUES (?, ?, ?, ?, 'pending')", (job_id, *key))
                self._update_ids("UPDATE dist_reports SET job_id = ? WHERE report_id IN ({marks})", (job_id,),
                                 ids[start:start + job_size])
                jobs += 1
        return jobs

    def pending_jobs(self, key: BatchKey | None = None) -> list[tuple[str, BatchKey]]:
        where, params = _batch_filter(key)
        rows = self._all(f"SELECT job_id, campaign, fingerprint, batch FROM dist_jobs WHERE state = 'pending'{where} "
                         "ORDER BY batch, job_id", params)
        return [(r[0], (r[1], r[2], r[3])) for r in rows]

    def leased_jobs(self, key: BatchKey | None = None, now: float | None = None) -> int:
        "Pending jobs whose lease has not expired (another driver runs them right now, or crashed recently)"
        where, params = _batch_filter(key)
        row = self._one(f"SELECT count(*) FROM dist_jobs WHERE state = 'pending' AND lease_expires >= ?{where}",
                        (time.time() if now is None else now, *params))
        return int(row[0])

    def claim_job(self, owner: str, lease_seconds: float, key: BatchKey | None = None,
                  skip: Sequence[str] = (), now: float | None = None) -> ClaimedJob | None:
        """Lease the first pending job that no driver holds (never leased, or its lease expired) and that is not in
        ``skip``: until ``now + lease_seconds`` no other driver claims it.  On PostgreSQL the candidate rows are
        read ``FOR UPDATE SKIP LOCKED``, so concurrent claims take different jobs without waiting."""
        now = time.time() if now is None else now
        where, params = _batch_filter(key)
        with self.transaction():
            rows = self._all(f"SELECT job_id, campaign, fingerprint, batch FROM dist_jobs WHERE state = 'pending' AND "
                             f"(lease_expires IS NULL OR lease_expires < ?){where} ORDER BY batch, job_id LIMIT ?"
                             + self._skip_locked, (now, *params, len(skip) + 1))
            free = [r for r in rows if r[0] not in skip]
            if not free:
                return None
            job_id = free[0][0]
            self.storage._run("UPDATE dist_jobs SET lease_owner = ?, lease_expires = ? WHERE job_id = ?",
                              (owner, now + lease_seconds, job_id))
        return ClaimedJob(job_id, (free[0][1], free[0][2], free[0][3]))

    def release_job(self, job_id: str, owner: str, error: str) -> None:
        "The claimed job failed this time: count the attempt, keep its error, and give the lease back"
        self.storage._run("UPDATE dist_jobs SET attempts = attempts + 1, last_error = ?, lease_owner = NULL, "
                          "lease_expires = NULL WHERE job_id = ? AND state = 'pending' AND lease_owner = ?",
                          (error[:500], job_id, owner))

    def release_leases(self, owner: str) -> int:
        """Give back every lease ``owner`` holds on a pending job (its driver stops: the jobs are free at once, not
        after the lease expires); how many.  The driver may still finish such a job: ``finish_job`` counts it once."""
        return self.storage._run("UPDATE dist_jobs SET lease_owner = NULL, lease_expires = NULL "
                                 "WHERE state = 'pending' AND lease_owner = ?", (owner,))

    def job_reports(self, job_id: str) -> list[StoredReport]:
        sql = ("SELECT report_id, public_share, leader_share, helper_share FROM dist_reports WHERE job_id = ? "
               "ORDER BY report_id")
        if self.storage.dialect == "postgresql":  # the shares in binary: no hex text to parse
            with self.storage._connection() as conn:
                rows = conn.execute(self.storage._sql(sql), (job_id,), binary=True).fetchall()
        else:
            rows = self._all(sql, (job_id,))
        return [StoredReport(bytes(r[0]), bytes(r[1]), bytes(r[2]), json.loads(r[3])) for r in rows]

    def finish_job(self, job_id: str, key: BatchKey, merge: Callable[[int, bytes | None], tuple[int, bytes]] | None,
                   aggregated: Sequence[bytes], rejected: Mapping[bytes, str], reasons: Mapping[str, int]) -> bool:
        """In one transaction: add the job's output shares to the batch's aggregate share (``merge(count, share)``
        gives the new one), mark its reports aggregated or rejected (their shares emptied: kept no longer than
        needed), count the rejections and mark the job done.  False, with nothing written, if the job was done
        already (another driver finished it after this one's lease expired): every report is counted once."""
        with self.transaction():
            count, share = self.lock_agg_share(key)  # first: serializes every writer of this batch
            row = self._one("SELECT state FROM dist_jobs WHERE job_id = ?" + self._for_update, (job_id,))
            if row is None or row[0] == "done":
                return False
            if merge is not None:
                self.put_agg_share(key, *merge(count, share))
            done = "public_share = ?, leader_share = ?, helper_share = ''"
            self._update_ids(f"UPDATE dist_reports SET state = 'aggregated', {done} WHERE report_id IN ({{marks}})",
                             (b"", b""), aggregated)
            self.storage._run_many(f"UPDATE dist_reports SET state = 'rejected', error = ?, {done} WHERE report_id = ?",
                                   [(error, b"", b"", rid) for rid, error in rejected.items()])
            self.count_rejections(key, reasons)
            self.storage._run("UPDATE dist_jobs SET state = 'done', attempts = attempts + 1, last_error = NULL, "
                              "lease_owner = NULL, lease_expires = NULL WHERE job_id = ?", (job_id,))
        return True

    def job_attempts(self, job_id: str) -> tuple[int, str | None]:
        "(attempts, last error) of a job"
        row = self._one("SELECT attempts, last_error FROM dist_jobs WHERE job_id = ?", (job_id,))
        return (int(row[0]), row[1]) if row else (0, None)

    # -- leader: releases ---------------------------------------------------------------------------------------

    def progress_rows(self, name: str, fingerprint: str) -> dict[str, dict]:
        """Per batch of a campaign version: report counts by state (``reports``), of those pending in a job
        (``in_jobs``), rejections by reason (``rejected``), the stored batch state and whether it was released"""
        key = (name, fingerprint)
        out: dict[str, dict] = {}

        def row(batch: str) -> dict:
            return out.setdefault(batch, {"reports": {}, "in_jobs": 0, "rejected": {}, "state": "open",
                                          "released": False})

        for batch, state, count, in_jobs in self._all(
                "SELECT batch, state, count(*), sum(CASE WHEN job_id IS NULL THEN 0 ELSE 1 END) FROM dist_reports "
                "WHERE campaign = ? AND fingerprint = ? GROUP BY batch, state", key):
            row(batch)["reports"][state] = int(count)
            if state == "pending":
                row(batch)["in_jobs"] = int(in_jobs or 0)
        for batch, reason, count in self._all(
                "SELECT batch, reason, count FROM dist_rejections WHERE campaign = ? AND fingerprint = ?", key):
            row(batch)["rejected"][reason] = int(count)
        for batch, state in self._all(
                "SELECT batch, state FROM dist_batches WHERE campaign = ? AND fingerprint = ?", key):
            row(batch)["state"] = state
        for (batch,) in self._all("SELECT batch FROM dist_releases WHERE campaign = ? AND fingerprint = ?", key):
            row(batch)["released"] = True
        return out

    # -- leader: releases ---------------------------------------------------------------------------------------
    def releases(self, name: str) -> list[dict]:
        rows = self._all("SELECT release FROM dist_releases WHERE campaign = ? ORDER BY batch, version", (name,))
        return [json.loads(r[0]) for r in rows]

    def release(self, key: BatchKey) -> dict | None:
        row = self._one("SELECT release FROM dist_releases WHERE campaign = ? AND fingerprint = ? AND batch = ?", key)
        return json.loads(row[0]) if row else None

    def put_release(self, key: BatchKey, version: int, release: dict) -> bool:
        "Store the batch's release unless one is stored already; True if this one was"
        return self.storage._run("INSERT INTO dist_releases (campaign, fingerprint, version, batch, release) "
                                 "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                                 (key[0], key[1], version, key[2], json.dumps(release))) > 0

    # -- helper -------------------------------------------------------------------------------------------------
    def helper_job(self, job_id: str) -> tuple[str, str] | None:
        "(request digest, stored answer) of a job this helper answered"
        row = self._one("SELECT request_digest, response FROM dist_helper_jobs WHERE job_id = ?", (job_id,))
        return (row[0], row[1]) if row else None

    def put_helper_job(self, job_id: str, key: BatchKey, request_digest: str, answer: dict) -> bool:
        "Store the job's answer; False if a job of this id was stored first (on PostgreSQL: waits for its commit)"
        return self.storage._run("INSERT INTO dist_helper_jobs (job_id, campaign, fingerprint, batch, request_digest, "
                                 "response) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (job_id) DO NOTHING",
                                 (job_id, *key, request_digest, json.dumps(answer))) > 0

    def seen_ids(self, ids: Sequence[bytes]) -> set[bytes]:
        return self._in_chunks("SELECT report_id FROM dist_helper_seen WHERE report_id IN ({marks})", ids)

    def add_seen(self, key: BatchKey, job_id: str, outcomes: Sequence[tuple[bytes, bool]]) -> set[bytes]:
        """Record report ids as processed by this helper's job, each with its outcome (valid or not); the ids that
        another job recorded first, left as they are (replays).  Such a job ran at the same time in a transaction of
        another batch (a leader that put one report into two batches): on PostgreSQL this insert waits for its
        commit, then the id is the other job's."""
        self.storage._run_many("INSERT INTO dist_helper_seen (report_id, campaign, fingerprint, batch, job_id, valid) "
                               "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (report_id) DO NOTHING",
                               [(rid, *key, job_id, int(ok)) for rid, ok in outcomes])
        return self._in_chunks("SELECT report_id FROM dist_helper_seen WHERE job_id <> ? AND report_id IN ({marks})",
                               [rid for rid, _ in outcomes], (job_id,))

    # -- both roles: a collected batch scrubbed ----------------------------------------------------------------
    def scrub_batch(self, key: BatchKey) -> None:
        """Once a batch is collected: drop what ties its reports to their jobs (a job holds the reports that arrived
        between two driver rounds: the job ids, the jobs' rows and the helper's stored answers, which list report
        ids) and rewrite its per-report rows in report-id order, so neither the rows nor the files order the
        batch's reports by arrival (``collector.storage.day_scrub``).  SQLite: the rows deleted and inserted again
        with secure_delete, SCRUB_CHUNK a transaction, then the WAL truncated; PostgreSQL: the tables rewritten by
        CLUSTER in one transaction.  Idempotent: an interrupted scrub loses nothing and can simply run again."""
        where = "campaign = ? AND fingerprint = ? AND batch = ?"
        jobs = [f"DELETE FROM {table} WHERE {where}" for table in ("dist_jobs", "dist_helper_jobs")]
        if self.storage.dialect == "postgresql":
            with self.transaction():
                # every table up front, in the order the job and upload transactions lock them (aggregate share
                # first, reports before jobs): waiting for them never closes a cycle with one of those
                self.storage._run(f"LOCK TABLE {', '.join(SCRUBBED_TABLES)} IN ACCESS EXCLUSIVE MODE")
                self.storage._run(f"UPDATE dist_reports SET job_id = NULL WHERE {where}", key)
                self.storage._run(f"UPDATE dist_helper_seen SET job_id = '' WHERE {where}", key)
                for sql in jobs:
                    self.storage._run(sql, key)
                for table in SCRUBBED_TABLES:  # a new file each, in primary-key order; no dead row left behind
                    self.storage._run(f"CLUSTER {table} USING {table}_pkey")
            return
        storage: Any = self.storage  # the SQLite Storage: its transactions, connection and writer lock
        rewrite_in_key_order(storage.transaction, "dist_reports", DIST_REPORT_COLUMNS, where, key,
                             replace={"job_id": None})
        rewrite_in_key_order(storage.transaction, "dist_helper_seen", HELPER_SEEN_COLUMNS, where, key,
                             replace={"job_id": ""})
        for sql in jobs:
            delete_securely(storage.transaction, sql, key)
        truncate_wal(storage.conn, storage._writer_locked)

    def helper_valid_ids(self, key: BatchKey) -> list[bytes]:
        rows = self._all("SELECT report_id FROM dist_helper_seen WHERE campaign = ? AND fingerprint = ? AND "
                         "batch = ? AND valid = 1 ORDER BY report_id", key)
        return [bytes(r[0]) for r in rows]


def _batch_filter(key: BatchKey | None) -> tuple[str, tuple]:
    if key is None:
        return "", ()
    return " AND campaign = ? AND fingerprint = ? AND batch = ?", key


def _share(row: Any) -> tuple[int, bytes | None]:
    "(report count, share); no share while nothing was added (a row made by :meth:`DistStore.lock_agg_share`)"
    if row is None:
        return 0, None
    return int(row[0]), (bytes(row[1]) if row[0] or row[1] else None)


def _blob(value: bytes | None) -> bytes | None:
    return bytes(value) if value is not None else None
