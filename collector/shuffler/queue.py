"""The shuffler's queue, in its own database (SQLite or PostgreSQL, through ``collector.storage``).

Tables (the shuffler's migrations, registered under the name ``shuffler``):

* ``shuffle_queue``: one row per report waiting for a batch: ``slot`` (16 random bytes from the OS CSPRNG, hex: the
  primary key, so rows are read in an order unrelated to arrival; SQLite: ``WITHOUT ROWID``, no rowid counts
  arrivals), the campaign, fingerprint, report id (unique: a device's resend is a duplicate) and the payload as JSON.
* ``shuffle_batches``: one row per batch being forwarded: its random id (the primary key; ``WITHOUT ROWID``), the
  campaign version, size and its reports as the one JSON array the collector takes, in the order drawn with the OS
  CSPRNG when the batch was formed (:func:`shuffled`).  Forming a batch reads its reports from ``shuffle_queue``,
  writes this one row and deletes theirs, in one transaction: each report is written twice (queued, then in its
  batch) and deleted twice (from the queue, then with its batch), never rewritten in place.
* ``shuffle_versions``: per campaign version with reports waiting for a batch, the time the first of them arrived
  (the batch's time limit counts from it: one time per batch, none per report).

Nothing identifies a sender: no address, user agent, key, time or order of arrival of a report.  Queued rows and a
forwarded batch's row are deleted with SQLite's ``secure_delete`` (their cells and freed pages overwritten with
zeros), and :meth:`ShuffleQueue.scrub` truncates the WAL (which holds page images in commit order).  On PostgreSQL
the heap keeps rows in arrival order while they are queued, and deleted ones until VACUUM.
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
    if _has_batch_column(conn, dialect):  # a file already at version 2 (its kind record reset) has none
        conn.execute("CREATE INDEX IF NOT EXISTS shuffle_queue_batch ON shuffle_queue (batch_id)")
    conn.execute("CREATE TABLE IF NOT EXISTS shuffle_versions (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL, "
                 "opened DOUBLE PRECISION NOT NULL, PRIMARY KEY (campaign, fingerprint))" + without_rowid)


def _has_batch_column(conn: Any, dialect: str) -> bool:
    "Whether ``shuffle_queue`` still has version 1's ``batch_id`` column"
    if dialect == "sqlite":
        columns = [row[1] for row in conn.execute("PRAGMA table_info(shuffle_queue)").fetchall()]
    else:
        columns = [row[0] for row in conn.execute("SELECT column_name FROM information_schema.columns "
                                                  "WHERE table_name = 'shuffle_queue'").fetchall()]
    return "batch_id" in columns


def _batch_table(conn: Any, dialect: str) -> None:
    """Batches in their own table (one row each, its shuffled JSON written once); the batches formed under version
    1 (rows of ``shuffle_queue`` marked with a batch id) moved into it under their ids, then the column dropped"""
    without_rowid = " WITHOUT ROWID" if dialect == "sqlite" else ""
    mark = "?" if dialect == "sqlite" else "%s"
    conn.execute("CREATE TABLE IF NOT EXISTS shuffle_batches (batch_id TEXT PRIMARY KEY, campaign TEXT NOT NULL, "
                 "fingerprint TEXT NOT NULL, size INTEGER NOT NULL, reports_json TEXT NOT NULL)" + without_rowid)
    if not _has_batch_column(conn, dialect):
        return  # already moved
    rows = conn.execute("SELECT batch_id, campaign, fingerprint, report_id, payload FROM shuffle_queue "
                        "WHERE batch_id IS NOT NULL").fetchall()
    formed: dict[str, list[tuple]] = {}
    for row in rows:
        formed.setdefault(str(row[0]), []).append(tuple(row[1:]))
    for batch_id, members in formed.items():
        campaign, fingerprint = str(members[0][0]), str(members[0][1])
        conn.execute(f"INSERT INTO shuffle_batches (batch_id, campaign, fingerprint, size, reports_json) VALUES "
                     f"({mark}, {mark}, {mark}, {mark}, {mark})",
                     (batch_id, campaign, fingerprint, len(members),
                      batch_json(campaign, fingerprint, [(m[2], m[3]) for m in members])))
    conn.execute("DELETE FROM shuffle_queue WHERE batch_id IS NOT NULL")
    conn.execute("DROP INDEX IF EXISTS shuffle_queue_batch")
    conn.execute("ALTER TABLE shuffle_queue DROP COLUMN batch_id")


MIGRATIONS = register_migrations(QUEUE_KIND, ((1, _create), (2, _batch_table)))
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
        keyed = dict(zip([pool[start:start + 16] for start in range(0, 16 * count, 16)], items))
        if len(keyed) == count:
            return [keyed[key] for key in sorted(keyed)]


def batch_json(campaign: str, fingerprint: str, members: Sequence[tuple[str, str]]) -> str:
    """The collector's JSON array of (report id, payload JSON text) ``members``, in a fresh :func:`shuffled` order:
    each report's members written around its payload's stored JSON text (report ids and the version are checked at
    ingest: UUID4, a campaign name, 32 hex digits), so no payload is decoded and encoded again"""
    version = f'"campaign":{json.dumps(campaign)},"fingerprint":{json.dumps(fingerprint)},"payload":'
    text = ",".join([f'{{"report_id":"{report_id}",{version}{payload}}}'
                     for report_id, payload in shuffled(list(members))])
    return f"[{text}]"


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
        a report id still waiting is a duplicate (once in a batch it is queued again, and the collector, which
        stores each report id once, counts it as a duplicate).  Committed before the caller answers the device."""
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
                                 "v.fingerprint = q.fingerprint GROUP BY q.campaign, q.fingerprint")
        return [Waiting(str(c), str(f), int(n), float(opened if opened is not None else 0.0))
                for c, f, n, opened in rows]

    def form_batch(self, campaign: str, fingerprint: str, most: int, now: float,
                   forget: Sequence[str] = ()) -> str | None:
        """Put up to ``most`` waiting reports of the version (those first by random slot) into a new batch, shuffled
        once (:func:`batch_json`) and written as one row of ``shuffle_batches``; their queued rows deleted; its id.
        Reports still waiting after it start a new batch's time limit at ``now``.  The batches ``forget`` (already
        acknowledged) are deleted in the same transaction: one commit per batch formed, not two."""
        batch_id = str(uuid.UUID(bytes=secrets.token_bytes(16), version=4))
        storage = self.storage
        with storage.transaction():
            self._delete(forget)
            rows = storage._all("SELECT slot, report_id, payload FROM shuffle_queue WHERE campaign = ? AND "
                                "fingerprint = ? ORDER BY slot LIMIT ?", (campaign, fingerprint, most))
            if rows:
                storage._run("INSERT INTO shuffle_batches (batch_id, campaign, fingerprint, size, reports_json) "
                             "VALUES (?, ?, ?, ?, ?)", (batch_id, campaign, fingerprint, len(rows),
                                                        batch_json(campaign, fingerprint,
                                                                   [(row[1], row[2]) for row in rows])))
                slots = [row[0] for row in rows]  # the rows read, by key (not the query again: reports may arrive)
                for first in range(0, len(slots), IDS_PER_QUERY):
                    chunk = slots[first:first + IDS_PER_QUERY]
                    storage._run(f"DELETE FROM shuffle_queue WHERE slot IN ({','.join('?' * len(chunk))})", chunk)
            storage._run("DELETE FROM shuffle_versions WHERE campaign = ? AND fingerprint = ?", (campaign, fingerprint))
            if storage._one("SELECT 1 FROM shuffle_queue WHERE campaign = ? AND fingerprint = ? LIMIT 1",
                            (campaign, fingerprint)):
                storage._run("INSERT INTO shuffle_versions (campaign, fingerprint, opened) VALUES (?, ?, ?)",
                             (campaign, fingerprint, now))
        return batch_id if rows else None

    def batches(self) -> list[str]:
        "Ids of the batches formed and not yet acknowledged (after a crash: to be sent again)"
        return sorted(str(row[0]) for row in self.storage._all("SELECT batch_id FROM shuffle_batches"))

    def batch(self, batch_id: str) -> Batch:
        "A formed batch: its reports in the order drawn when it was formed, as the collector's JSON"
        row = self.storage._one("SELECT campaign, fingerprint, size, reports_json FROM shuffle_batches "
                                "WHERE batch_id = ?", (batch_id,))
        if row is None:
            return Batch(batch_id, "", "", 0, "[]")
        return Batch(batch_id, str(row[0]), str(row[1]), int(row[2]), str(row[3]))

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
            self.storage._run("DELETE FROM shuffle_batches WHERE batch_id = ?", (batch_id,))

    def scrub(self) -> bool:
        "SQLite: truncate the WAL (its frames hold page images in commit order); True once done"
        storage = self.storage
        if storage.dialect != "sqlite":
            return True
        return truncate_wal(storage.conn, storage._writer_locked)  # type: ignore[attr-defined]

    def count(self) -> int:
        "Reports held: waiting, and in batches not yet acknowledged"
        waiting = int(self.storage._one("SELECT COUNT(*) FROM shuffle_queue")[0])
        return waiting + int(self.storage._one("SELECT COALESCE(SUM(size), 0) FROM shuffle_batches")[0])
