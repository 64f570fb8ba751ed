"""The shuffler's queue, in its own database (SQLite or PostgreSQL, through ``collector.storage``).

Tables (the shuffler's migrations, registered under the name ``shuffler``):

* ``shuffle_queue``: one row per queued report: ``slot`` (16 random bytes from the OS CSPRNG, hex: the primary key,
  so rows are read in an order unrelated to arrival; SQLite: ``WITHOUT ROWID``, no rowid counts arrivals), the
  campaign, fingerprint, report id (unique: a device's resend is a duplicate), the payload as JSON, and the batch id
  once the row is in a batch being forwarded.
* ``shuffle_versions``: per campaign version with reports waiting for a batch, the time the first of them arrived
  (the batch's time limit counts from it: one time per batch, none per report).

Nothing identifies a sender: no address, user agent, key, time or order of arrival of a report.  A forwarded
batch's rows are deleted with SQLite's ``secure_delete`` (their cells and freed pages overwritten with zeros) once
the collector acknowledged it, and :meth:`ShuffleQueue.scrub` truncates the WAL (which holds page images in commit
order).  On PostgreSQL the heap keeps rows in arrival order while they are queued, and deleted ones until VACUUM.
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..storage import RateRule, StorageBase
from ..storage.day_scrub import truncate_wal
from ..storage.kind_migrations import register_migrations

QUEUE_KIND = "shuffler"  # the name its migrations are recorded under
IDS_PER_QUERY = 900


def _create(conn: Any, dialect: str) -> None:
    without_rowid = " WITHOUT ROWID" if dialect == "sqlite" else ""
    conn.execute("CREATE TABLE IF NOT EXISTS shuffle_queue (slot TEXT PRIMARY KEY, campaign TEXT NOT NULL, "
                 "fingerprint TEXT NOT NULL, report_id TEXT NOT NULL UNIQUE, payload TEXT NOT NULL, batch_id TEXT)"
                 + without_rowid)
    conn.execute("CREATE INDEX IF NOT EXISTS shuffle_queue_batch ON shuffle_queue (batch_id)")
    conn.execute("CREATE TABLE IF NOT EXISTS shuffle_versions (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL, "
                 "opened DOUBLE PRECISION NOT NULL, PRIMARY KEY (campaign, fingerprint))" + without_rowid)


MIGRATIONS = register_migrations(QUEUE_KIND, ((1, _create),))
QueuedReport = tuple[str, str, str, Any]  # (report_id, campaign, fingerprint, payload)


@dataclass(frozen=True)
class Waiting:
    "A campaign version's reports not yet in a batch: how many, and since when the first waits"

    campaign: str
    fingerprint: str
    queued: int
    opened: float


@dataclass(frozen=True)
class Batch:
    """A batch being forwarded: its id, campaign version, size and reports in a fresh CSPRNG-shuffled order, as the
    JSON array the collector takes (``reports_json``, written from the stored payloads' JSON: nothing decoded)"""

    batch_id: str
    campaign: str
    fingerprint: str
    size: int
    reports_json: str

    @property
    def reports(self) -> list[dict]:
        "The reports decoded (tests and tools)"
        decoded: list[dict] = json.loads(self.reports_json)
        return decoded


def shuffled(items: list[Any]) -> list[Any]:
    """``items`` in a uniformly random order: sorted by 16 bytes each from the OS CSPRNG (one ``token_bytes`` call
    for them all), drawn again in the (2^-128-unlikely) event of two equal keys, so every order is equally likely"""
    count = len(items)
    while True:
        pool = secrets.token_bytes(16 * count)
        keys = [pool[16 * i:16 * i + 16] for i in range(count)]
        if len(set(keys)) == count:
            return [item for _, item in sorted(zip(keys, items), key=lambda pair: pair[0])]


class ShuffleQueue:
    "Every statement on the shuffler's tables"

    def __init__(self, storage: StorageBase) -> None:
        self.storage = storage
        if storage.dialect == "sqlite":  # deleted cells and freed pages overwritten with zeros
            with storage._connection() as conn:
                conn.execute("PRAGMA secure_delete = 1")

    def enqueue(self, reports: Sequence[QueuedReport], now: float, *, key_hash: str | None = None,
                rate: RateRule | None = None) -> tuple[int, int]:
        """Queue the reports in one transaction (with the key's rate token, if ``rate``): (accepted, duplicate);
        a report id already queued is a duplicate.  Committed before the caller answers the device."""
        rows = [(secrets.token_hex(16), campaign, fingerprint, report_id, json.dumps(payload, separators=(",", ":")))
                for report_id, campaign, fingerprint, payload in reports]
        ids = [row[3] for row in rows]
        storage = self.storage
        with storage.transaction():
            if rate is not None and key_hash is not None:
                storage._take_token(key_hash, rate, now)
            known = self._queued_ids(ids)
            fresh = [row for row in rows if row[3] not in known]
            unique: dict[str, tuple] = {}
            for row in fresh:
                unique.setdefault(row[3], row)
            storage._run_many("INSERT INTO shuffle_queue (slot, campaign, fingerprint, report_id, payload) "
                              "VALUES (?, ?, ?, ?, ?)", list(unique.values()))
            versions = sorted({(row[1], row[2]) for row in unique.values()})
            storage._run_many("INSERT INTO shuffle_versions (campaign, fingerprint, opened) VALUES (?, ?, ?) "
                              "ON CONFLICT DO NOTHING", [(c, f, now) for c, f in versions])
        return len(unique), len(rows) - len(unique)

    def _queued_ids(self, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(ids), IDS_PER_QUERY):
            chunk = ids[start:start + IDS_PER_QUERY]
            marks = ",".join("?" * len(chunk))
            found.update(row[0] for row in self.storage._all(
                f"SELECT report_id FROM shuffle_queue WHERE report_id IN ({marks})", chunk))
        return found

    def waiting(self) -> list[Waiting]:
        "The versions with reports not yet in a batch"
        rows = self.storage._all("SELECT q.campaign, q.fingerprint, COUNT(*), MIN(v.opened) FROM shuffle_queue q "
                                 "LEFT JOIN shuffle_versions v ON v.campaign = q.campaign AND "
                                 "v.fingerprint = q.fingerprint WHERE q.batch_id IS NULL "
                                 "GROUP BY q.campaign, q.fingerprint")
        return [Waiting(str(c), str(f), int(n), float(opened if opened is not None else 0.0))
                for c, f, n, opened in rows]

    def form_batch(self, campaign: str, fingerprint: str, most: int, now: float,
                   forget: Sequence[str] = ()) -> str | None:
        """Put up to ``most`` waiting reports of the version into a new batch (an order by random slot); its id.
        Reports still waiting after it start a new batch's time limit at ``now``.  The batches ``forget`` (already
        acknowledged) are deleted in the same transaction: one commit per batch formed, not two."""
        batch_id = str(uuid.UUID(bytes=secrets.token_bytes(16), version=4))
        storage = self.storage
        with storage.transaction():
            self._delete(forget)
            changed = storage._run(
                "UPDATE shuffle_queue SET batch_id = ? WHERE slot IN (SELECT slot FROM shuffle_queue WHERE "
                "campaign = ? AND fingerprint = ? AND batch_id IS NULL ORDER BY slot LIMIT ?)",
                (batch_id, campaign, fingerprint, most))
            storage._run("DELETE FROM shuffle_versions WHERE campaign = ? AND fingerprint = ?", (campaign, fingerprint))
            if storage._one("SELECT 1 FROM shuffle_queue WHERE campaign = ? AND fingerprint = ? AND batch_id IS NULL "
                            "LIMIT 1", (campaign, fingerprint)):
                storage._run("INSERT INTO shuffle_versions (campaign, fingerprint, opened) VALUES (?, ?, ?)",
                             (campaign, fingerprint, now))
        return batch_id if changed else None

    def batches(self) -> list[str]:
        "Ids of the batches formed and not yet acknowledged (after a crash: to be sent again)"
        return sorted(str(row[0]) for row in self.storage._all(
            "SELECT DISTINCT batch_id FROM shuffle_queue WHERE batch_id IS NOT NULL"))

    def batch(self, batch_id: str) -> Batch:
        """A formed batch's reports, shuffled with the OS CSPRNG (:func:`shuffled`), as the collector's JSON: each
        report's members written around its payload's stored JSON text (report ids and the version are checked
        at ingest: UUID4, a campaign name, 32 hex digits), so no payload is decoded and encoded again"""
        rows = self.storage._all("SELECT campaign, fingerprint, report_id, payload FROM shuffle_queue "
                                 "WHERE batch_id = ?", (batch_id,))
        if not rows:
            return Batch(batch_id, "", "", 0, "[]")
        campaign, fingerprint = str(rows[0][0]), str(rows[0][1])
        version = f'"campaign":{json.dumps(campaign)},"fingerprint":{json.dumps(fingerprint)},"payload":'
        text = ",".join([f'{{"report_id":"{report_id}",{version}{payload}}}'
                         for report_id, payload in shuffled([(row[2], row[3]) for row in rows])])
        return Batch(batch_id, campaign, fingerprint, len(rows), f"[{text}]")

    def delete_batch(self, batch_id: str) -> None:
        "Forget an acknowledged batch (SQLite: its cells overwritten with zeros)"
        self.delete_batches([batch_id])

    def delete_batches(self, batch_ids: Sequence[str]) -> None:
        "Forget acknowledged batches, in one transaction"
        if batch_ids:
            with self.storage.transaction():
                self._delete(batch_ids)

    def _delete(self, batch_ids: Sequence[str]) -> None:
        for batch_id in batch_ids:
            self.storage._run("DELETE FROM shuffle_queue WHERE batch_id = ?", (batch_id,))

    def scrub(self) -> bool:
        "SQLite: truncate the WAL (its frames hold page images in commit order); True once done"
        storage = self.storage
        if storage.dialect != "sqlite":
            return True
        return truncate_wal(storage.conn, storage._writer_locked)  # type: ignore[attr-defined]

    def count(self) -> int:
        return int(self.storage._one("SELECT COUNT(*) FROM shuffle_queue")[0])
