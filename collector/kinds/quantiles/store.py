"""The quantiles kind's own tables, in the collector's database (SQLite or PostgreSQL), and every statement on them.

* ``quantiles_aggregates``  per campaign version (name, fingerprint) and UTC day: the day's mergeable aggregate
                            (``estimators.kinds.quantiles.QuantilesAggregate.to_dict()`` as JSON) and its n
* ``quantiles_seen``        the report ids accepted (a device retrying a batch sends the same ids), with their day

The DDL is :data:`MIGRATIONS` (registered with the kind, applied by every backend's ``migrate()``).  Statements are
written once in the SQL both backends accept (the storage's ``?`` placeholders); the read-modify-write of a day's
aggregate locks its row on PostgreSQL (``FOR UPDATE``; SQLite's transaction holds the only write lock).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from client_sdk.kinds.quantiles import QuantilesParams
from estimators.kinds.quantiles import QuantilesAggregate

from ...storage import StorageBase
from ...storage.kind_migrations import KindMigrations

KIND = "quantiles"
IDS_PER_QUERY = 900  # report ids per IN (...) list: below SQLite's historical 999 variables
_TABLES = (
    """CREATE TABLE IF NOT EXISTS quantiles_aggregates (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    day TEXT NOT NULL, n INTEGER NOT NULL, aggregate TEXT NOT NULL, PRIMARY KEY (campaign, fingerprint, day))""",
    """CREATE TABLE IF NOT EXISTS quantiles_seen (report_id TEXT PRIMARY KEY, campaign TEXT NOT NULL,
    fingerprint TEXT NOT NULL, day TEXT NOT NULL)""",
)
TABLES = ("quantiles_aggregates", "quantiles_seen")


def create_tables(conn: Any, dialect: str) -> None:
    "Migration 1: both tables"
    for statement in _TABLES:
        conn.execute(statement)


MIGRATIONS = KindMigrations(KIND, ((1, create_tables),))


class QuantilesStore:
    "The statements on the kind's tables, over one storage (its connection and transactions)"

    def __init__(self, storage: StorageBase) -> None:
        self.storage = storage
        self._for_update = " FOR UPDATE" if storage.dialect == "postgresql" else ""

    def transaction(self) -> Any:
        return self.storage.transaction()

    def seen(self, report_ids: Sequence[str]) -> set[str]:
        "The ids among ``report_ids`` accepted before"
        found: set[str] = set()
        for start in range(0, len(report_ids), IDS_PER_QUERY):
            chunk = report_ids[start:start + IDS_PER_QUERY]
            marks = ",".join("?" * len(chunk))
            found |= {str(row[0]) for row in self.storage._all(
                f"SELECT report_id FROM quantiles_seen WHERE report_id IN ({marks})", chunk)}
        return found

    def add(self, name: str, params: QuantilesParams, fingerprint: str, day: str, report_ids: Sequence[str],
            aggregate: QuantilesAggregate) -> None:
        "Add a batch's aggregate to the day's and remember its ids (call inside :meth:`transaction`)"
        row = self.storage._one("SELECT aggregate FROM quantiles_aggregates WHERE campaign = ? AND fingerprint = ? "
                                f"AND day = ?{self._for_update}", (name, fingerprint, day))
        total = aggregate if row is None else _decode(row[0]).merge(aggregate)
        self.storage._run("INSERT INTO quantiles_aggregates (campaign, fingerprint, day, n, aggregate) "
                          "VALUES (?, ?, ?, ?, ?) ON CONFLICT (campaign, fingerprint, day) DO UPDATE SET "
                          "n = excluded.n, aggregate = excluded.aggregate",
                          (name, fingerprint, day, total.n, json.dumps(total.to_dict(), separators=(",", ":"))))
        self.storage._run_many("INSERT INTO quantiles_seen (report_id, campaign, fingerprint, day) "
                               "VALUES (?, ?, ?, ?)", [(rid, name, fingerprint, day) for rid in report_ids])

    def days(self, name: str, fingerprint: str, since: str | None,
             until: str | None) -> list[tuple[str, QuantilesAggregate]]:
        "The (day, aggregate) pairs of a campaign version in [since, until], by day"
        rows = self.storage._all("SELECT day, aggregate FROM quantiles_aggregates WHERE campaign = ? AND "
                                 "fingerprint = ? AND day >= ? AND day <= ? ORDER BY day",
                                 (name, fingerprint, since or "0000-00-00", until or "9999-99-99"))
        return [(str(day), _decode(raw)) for day, raw in rows]


def merged(params: QuantilesParams, fingerprint: str,
           days: Iterable[tuple[str, QuantilesAggregate]]) -> QuantilesAggregate:
    "The aggregate of every day (the empty one when there is none)"
    total = QuantilesAggregate.empty(params, fingerprint)
    for _, aggregate in days:
        total = total.merge(aggregate)
    return total


def _decode(raw: str) -> QuantilesAggregate:
    return QuantilesAggregate.from_dict(json.loads(raw))
