"""The SQLite tables of a distributed campaign's two aggregators, in the aggregator's own collector database.

Both roles (``dist_meta`` holds the schema version of these tables, apart from the collector's ``user_version``):

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
for replay checks and the batch checksum), ``dist_jobs`` (aggregation jobs), ``dist_rejections`` (counts by reason) and
``dist_releases``.  Helper only: ``dist_helper_jobs`` (each job's request digest and stored answer) and
``dist_helper_seen`` (every report id the helper has processed, with its batch and outcome).

No time of day is stored anywhere: a batch is a UTC day.  Every write is one ``BEGIN IMMEDIATE`` transaction of
the collector's :class:`~collector.storage.Storage` (``synchronous=FULL``).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from client_sdk.errors import LDPError

from ..storage import Storage, StorageBase, restrict_database

DIST_SCHEMA_VERSION = 2
BatchKey = tuple[str, str, str]  # (campaign name, fingerprint, batch day)
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS dist_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS dist_hpke_keys (config_id INTEGER PRIMARY KEY, private_key BLOB NOT NULL,
    created_day TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS dist_campaigns (name TEXT NOT NULL, fingerprint TEXT NOT NULL, role TEXT NOT NULL,
    verify_key BLOB NOT NULL, helper_url TEXT, helper_hpke_config TEXT, state TEXT NOT NULL,
    PRIMARY KEY (name, fingerprint))""",
    """CREATE TABLE IF NOT EXISTS dist_agg_shares (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    batch TEXT NOT NULL, report_count INTEGER NOT NULL, share BLOB NOT NULL,
    PRIMARY KEY (campaign, fingerprint, batch))""",
    """CREATE TABLE IF NOT EXISTS dist_batches (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL, batch TEXT NOT NULL,
    state TEXT NOT NULL, seed_own BLOB, seed_commitment BLOB, answer TEXT,
    PRIMARY KEY (campaign, fingerprint, batch))""",
    """CREATE TABLE IF NOT EXISTS dist_reports (report_id BLOB PRIMARY KEY, campaign TEXT NOT NULL,
    fingerprint TEXT NOT NULL, batch TEXT NOT NULL, public_share BLOB NOT NULL, leader_share BLOB NOT NULL,
    helper_share TEXT NOT NULL, job_id TEXT, state TEXT NOT NULL, error TEXT) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS idx_dist_reports_batch ON dist_reports (campaign, fingerprint, batch, state)",
    "CREATE INDEX IF NOT EXISTS idx_dist_reports_job ON dist_reports (job_id)",
    "CREATE INDEX IF NOT EXISTS idx_dist_reports_pending ON dist_reports (state, job_id)",
    """CREATE TABLE IF NOT EXISTS dist_jobs (job_id TEXT PRIMARY KEY, campaign TEXT NOT NULL,
    fingerprint TEXT NOT NULL, batch TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT)""",
    """CREATE TABLE IF NOT EXISTS dist_rejections (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    batch TEXT NOT NULL, reason TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (campaign, fingerprint, batch, reason))""",
    """CREATE TABLE IF NOT EXISTS dist_releases (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    version INTEGER NOT NULL, batch TEXT NOT NULL, release TEXT NOT NULL,
    PRIMARY KEY (campaign, fingerprint, batch))""",
    """CREATE TABLE IF NOT EXISTS dist_helper_jobs (job_id TEXT PRIMARY KEY, campaign TEXT NOT NULL,
    fingerprint TEXT NOT NULL, batch TEXT NOT NULL, request_digest TEXT NOT NULL, response TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS dist_helper_seen (report_id BLOB PRIMARY KEY, campaign TEXT NOT NULL,
    fingerprint TEXT NOT NULL, batch TEXT NOT NULL, job_id TEXT NOT NULL, valid INTEGER NOT NULL) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS idx_dist_helper_seen_batch ON dist_helper_seen (campaign, fingerprint, batch, valid)",
)
# Schema 2 (key rotation): each key's place in the rotation order.  Keys of schema 1 (one per aggregator) get 0.
SCHEMA_2 = ("ALTER TABLE dist_hpke_keys ADD COLUMN seq INTEGER NOT NULL DEFAULT 0",)


FAILPOINT_ENV = "LDP_FAILPOINT"


def failpoint(name: str) -> None:
    """Crash tests: when ``LDP_FAILPOINT`` names this point, SIGKILL the aggregator's whole process group here (a
    server started in its own session: the gunicorn master and its workers), as a power cut would"""
    if os.environ.get(FAILPOINT_ENV) == name:
        os.killpg(os.getpgrp(), signal.SIGKILL)


class DistributedNeedsSqlite(LDPError):
    "Distributed campaigns keep their state in SQLite only (for now)"


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


class DistStore:
    "The distributed tables over a collector :class:`~collector.storage.Storage` (SQLite)"

    def __init__(self, storage: StorageBase) -> None:
        if not isinstance(storage, Storage):
            raise DistributedNeedsSqlite("distributed campaigns need a SQLite database (not a postgresql:// URL)")
        self.storage = storage

    @property
    def conn(self) -> sqlite3.Connection:
        return self.storage.conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self.storage.transaction() as conn:
            yield conn

    def migrate(self) -> None:
        """Create the tables (idempotent); refuses a database written by a newer schema.  The database holds this
        aggregator's HPKE private key and the verify keys: an older file readable by others is made 0600."""
        restrict_database(self.storage.path)
        row = self._version()
        if row is not None and row >= DIST_SCHEMA_VERSION:
            if row > DIST_SCHEMA_VERSION:
                raise RuntimeError(f"distributed schema version {row} is newer than this code's {DIST_SCHEMA_VERSION}")
            return
        with self.transaction() as conn:
            for statement in SCHEMA:
                conn.execute(statement)
            if row is None or row < 2:
                for statement in SCHEMA_2:
                    conn.execute(statement)
            conn.execute("INSERT INTO dist_meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) "
                         "DO UPDATE SET value = excluded.value", (str(DIST_SCHEMA_VERSION),))

    def _version(self) -> int | None:
        try:
            row = self.conn.execute("SELECT value FROM dist_meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.OperationalError:
            return None
        return int(row[0]) if row else None

    # -- HPKE keys ----------------------------------------------------------------------------------------------
    def hpke_keys(self) -> list[StoredKey]:
        "Every key pair of this aggregator, newest (highest ``seq``) first"
        rows = self.conn.execute("SELECT config_id, private_key, created_day, seq FROM dist_hpke_keys "
                                 "ORDER BY seq DESC, config_id")
        return [StoredKey(int(r[0]), bytes(r[1]), r[2], int(r[3])) for r in rows]

    def hpke_keys_version(self) -> tuple[int, int]:
        "(number of keys, highest seq): changes with every rotation, read to know a cached key list is current"
        row = self.conn.execute("SELECT count(*), coalesce(max(seq), -1) FROM dist_hpke_keys").fetchone()
        return int(row[0]), int(row[1])

    def add_hpke_key(self, config_id: int, private_key: bytes, day: str, *, first: bool = True) -> bool:
        """Store a key pair as the newest; with ``first``, only if there is none yet (another worker won the race of
        the first start).  False if not stored: ``first`` and a key exists, or ``config_id`` is taken."""
        with self.transaction() as conn:
            if first and conn.execute("SELECT 1 FROM dist_hpke_keys").fetchone() is not None:
                return False
            if conn.execute("SELECT 1 FROM dist_hpke_keys WHERE config_id = ?", (config_id,)).fetchone():
                return False
            seq = conn.execute("SELECT coalesce(max(seq), -1) + 1 FROM dist_hpke_keys").fetchone()[0]
            conn.execute("INSERT INTO dist_hpke_keys (config_id, private_key, created_day, seq) VALUES (?, ?, ?, ?)",
                         (config_id, private_key, day, seq))
            return True

    # -- campaigns ----------------------------------------------------------------------------------------------
    def campaign(self, name: str, fingerprint: str) -> DistCampaign | None:
        row = self.conn.execute("SELECT name, fingerprint, role, verify_key, helper_url, helper_hpke_config, state "
                                "FROM dist_campaigns WHERE name = ? AND fingerprint = ?",
                                (name, fingerprint)).fetchone()
        if row is None:
            return None
        return DistCampaign(row[0], row[1], row[2], bytes(row[3]), row[4],
                            json.loads(row[5]) if row[5] else None, row[6])

    def leader_campaigns(self) -> list[DistCampaign]:
        "The ready campaigns this aggregator leads"
        rows = self.conn.execute("SELECT name, fingerprint FROM dist_campaigns WHERE role = 'leader' AND "
                                 "state = 'ready' ORDER BY name, fingerprint").fetchall()
        return [c for c in (self.campaign(r[0], r[1]) for r in rows) if c is not None]

    def put_campaign(self, campaign: DistCampaign, conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO dist_campaigns (name, fingerprint, role, verify_key, helper_url, helper_hpke_config, "
                     "state) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name, fingerprint) DO UPDATE SET "
                     "helper_url = excluded.helper_url, helper_hpke_config = excluded.helper_hpke_config, "
                     "state = excluded.state",
                     (campaign.name, campaign.fingerprint, campaign.role, campaign.verify_key, campaign.helper_url,
                      json.dumps(campaign.helper_hpke_config) if campaign.helper_hpke_config else None,
                      campaign.state))

    # -- batches ------------------------------------------------------------------------------------------------
    def batch_state(self, key: BatchKey, conn: sqlite3.Connection | None = None) -> str:
        row = (conn or self.conn).execute("SELECT state FROM dist_batches WHERE campaign = ? AND fingerprint = ? AND "
                                          "batch = ?", key).fetchone()
        return row[0] if row else "open"

    def batch_row(self, key: BatchKey) -> tuple[str, bytes | None, bytes | None, str | None]:
        row = self.conn.execute("SELECT state, seed_own, seed_commitment, answer FROM dist_batches WHERE campaign = ? "
                                "AND fingerprint = ? AND batch = ?", key).fetchone()
        if row is None:
            return "open", None, None, None
        return row[0], _blob(row[1]), _blob(row[2]), row[3]

    @staticmethod
    def set_batch(conn: sqlite3.Connection, key: BatchKey, state: str, **values: object) -> None:
        conn.execute("INSERT INTO dist_batches (campaign, fingerprint, batch, state) VALUES (?, ?, ?, ?) "
                     "ON CONFLICT (campaign, fingerprint, batch) DO UPDATE SET state = excluded.state", (*key, state))
        for column, value in values.items():
            if column not in ("seed_own", "seed_commitment", "answer"):
                raise ValueError(f"unknown batch column {column}")
            conn.execute(f"UPDATE dist_batches SET {column} = ? WHERE campaign = ? AND fingerprint = ? AND batch = ?",
                         (value, *key))

    # -- aggregate shares ---------------------------------------------------------------------------------------
    def agg_share(self, key: BatchKey, conn: sqlite3.Connection | None = None) -> tuple[int, bytes | None]:
        row = (conn or self.conn).execute("SELECT report_count, share FROM dist_agg_shares WHERE campaign = ? AND "
                                          "fingerprint = ? AND batch = ?", key).fetchone()
        return (int(row[0]), bytes(row[1])) if row else (0, None)

    @staticmethod
    def put_agg_share(conn: sqlite3.Connection, key: BatchKey, report_count: int, share: bytes) -> None:
        conn.execute("INSERT INTO dist_agg_shares (campaign, fingerprint, batch, report_count, share) "
                     "VALUES (?, ?, ?, ?, ?) ON CONFLICT (campaign, fingerprint, batch) DO UPDATE SET "
                     "report_count = excluded.report_count, share = excluded.share", (*key, report_count, share))

    # -- leader: reports, jobs, rejections, releases ------------------------------------------------------------
    @staticmethod
    def count_rejections(conn: sqlite3.Connection, key: BatchKey, reasons: dict[str, int]) -> None:
        conn.executemany("INSERT INTO dist_rejections (campaign, fingerprint, batch, reason, count) "
                         "VALUES (?, ?, ?, ?, ?) ON CONFLICT (campaign, fingerprint, batch, reason) DO UPDATE SET "
                         "count = count + excluded.count", [(*key, r, c) for r, c in reasons.items() if c])

    def rejections(self, key: BatchKey) -> dict[str, int]:
        rows = self.conn.execute("SELECT reason, count FROM dist_rejections WHERE campaign = ? AND fingerprint = ? "
                                 "AND batch = ? ORDER BY reason", key)
        return {r[0]: int(r[1]) for r in rows}

    def existing_report_ids(self, ids: Sequence[bytes]) -> set[bytes]:
        found: set[bytes] = set()
        for start in range(0, len(ids), 900):
            chunk = ids[start:start + 900]
            marks = ",".join("?" * len(chunk))
            found |= {bytes(r[0]) for r in
                      self.conn.execute(f"SELECT report_id FROM dist_reports WHERE report_id IN ({marks})", chunk)}
        return found

    def report_states(self, key: BatchKey) -> dict[str, int]:
        rows = self.conn.execute("SELECT state, count(*) FROM dist_reports WHERE campaign = ? AND fingerprint = ? AND "
                                 "batch = ? GROUP BY state", key)
        return {r[0]: int(r[1]) for r in rows}

    def aggregated_ids(self, key: BatchKey) -> list[bytes]:
        rows = self.conn.execute("SELECT report_id FROM dist_reports WHERE campaign = ? AND fingerprint = ? AND "
                                 "batch = ? AND state = 'aggregated' ORDER BY report_id", key)
        return [bytes(r[0]) for r in rows]

    def pending_batches(self) -> list[BatchKey]:
        "Batches with reports that are not yet in a job, or with jobs not yet done"
        rows = self.conn.execute(
            "SELECT DISTINCT campaign, fingerprint, batch FROM dist_reports WHERE state = 'pending' AND job_id IS NULL "
            "UNION SELECT DISTINCT campaign, fingerprint, batch FROM dist_jobs WHERE state = 'pending' ORDER BY 3, 1")
        return [(r[0], r[1], r[2]) for r in rows]

    def pending_jobs(self, key: BatchKey | None = None) -> list[tuple[str, BatchKey]]:
        if key is None:
            rows = self.conn.execute("SELECT job_id, campaign, fingerprint, batch FROM dist_jobs WHERE state = "
                                     "'pending' ORDER BY batch, job_id")
        else:
            rows = self.conn.execute("SELECT job_id, campaign, fingerprint, batch FROM dist_jobs WHERE state = "
                                     "'pending' AND campaign = ? AND fingerprint = ? AND batch = ? ORDER BY job_id",
                                     key)
        return [(r[0], (r[1], r[2], r[3])) for r in rows]

    def job_reports(self, job_id: str) -> list[StoredReport]:
        rows = self.conn.execute("SELECT report_id, public_share, leader_share, helper_share FROM dist_reports "
                                 "WHERE job_id = ? ORDER BY report_id", (job_id,))
        return [StoredReport(bytes(r[0]), bytes(r[1]), bytes(r[2]), json.loads(r[3])) for r in rows]

    def progress_rows(self, name: str, fingerprint: str) -> dict[str, dict]:
        """Per batch of a campaign version: report counts by state (``reports``), of those pending in a job
        (``in_jobs``), rejections by reason (``rejected``), the stored batch state and whether it was released"""
        key = (name, fingerprint)
        out: dict[str, dict] = {}

        def row(batch: str) -> dict:
            return out.setdefault(batch, {"reports": {}, "in_jobs": 0, "rejected": {}, "state": "open",
                                          "released": False})

        for batch, state, count, in_jobs in self.conn.execute(
                "SELECT batch, state, count(*), sum(CASE WHEN job_id IS NULL THEN 0 ELSE 1 END) FROM dist_reports "
                "WHERE campaign = ? AND fingerprint = ? GROUP BY batch, state", key):
            row(batch)["reports"][state] = int(count)
            if state == "pending":
                row(batch)["in_jobs"] = int(in_jobs or 0)
        for batch, reason, count in self.conn.execute(
                "SELECT batch, reason, count FROM dist_rejections WHERE campaign = ? AND fingerprint = ?", key):
            row(batch)["rejected"][reason] = int(count)
        for batch, state in self.conn.execute(
                "SELECT batch, state FROM dist_batches WHERE campaign = ? AND fingerprint = ?", key):
            row(batch)["state"] = state
        for (batch,) in self.conn.execute(
                "SELECT batch FROM dist_releases WHERE campaign = ? AND fingerprint = ?", key):
            row(batch)["released"] = True
        return out

    def releases(self, name: str) -> list[dict]:
        rows = self.conn.execute("SELECT release FROM dist_releases WHERE campaign = ? ORDER BY batch, version",
                                 (name,))
        return [json.loads(r[0]) for r in rows]

    def release(self, key: BatchKey, conn: sqlite3.Connection | None = None) -> dict | None:
        row = (conn or self.conn).execute("SELECT release FROM dist_releases WHERE campaign = ? AND "
                                          "fingerprint = ? AND batch = ?", key).fetchone()
        return json.loads(row[0]) if row else None

    # -- helper -------------------------------------------------------------------------------------------------
    @staticmethod
    def helper_job(conn: sqlite3.Connection, job_id: str) -> tuple[str, str] | None:
        row = conn.execute("SELECT request_digest, response FROM dist_helper_jobs WHERE job_id = ?",
                           (job_id,)).fetchone()
        return (row[0], row[1]) if row else None

    @staticmethod
    def seen_ids(conn: sqlite3.Connection, ids: Sequence[bytes]) -> set[bytes]:
        found: set[bytes] = set()
        for start in range(0, len(ids), 900):
            chunk = ids[start:start + 900]
            marks = ",".join("?" * len(chunk))
            found |= {bytes(r[0]) for r in
                      conn.execute(f"SELECT report_id FROM dist_helper_seen WHERE report_id IN ({marks})", chunk)}
        return found

    def helper_valid_ids(self, key: BatchKey) -> list[bytes]:
        rows = self.conn.execute("SELECT report_id FROM dist_helper_seen WHERE campaign = ? AND fingerprint = ? AND "
                                 "batch = ? AND valid = 1 ORDER BY report_id", key)
        return [bytes(r[0]) for r in rows]



def _blob(value: bytes | None) -> bytes | None:
    return bytes(value) if value is not None else None
