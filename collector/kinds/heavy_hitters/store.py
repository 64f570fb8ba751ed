"""The heavy_hitters kind's own tables (SQLite or PostgreSQL, one SQL for both) and every statement on them.

* ``hh_seen``         every accepted report id, with its campaign version and UTC day (duplicates are refused)
* ``hh_sketch``       per day and group the count table's cells, one row per non-zero cell, added to in place
                      (``INSERT ... ON CONFLICT DO UPDATE``): PEM's report counts at (hash, y), cell
                      hash * g + y; SFP's Count Mean Sketch signed sums sum(1 - 2 bit) at row * width + column
* ``hh_counts``       per day and group the reports added to its table

Migration 2 drops migration 1's ``hh_pem_reports`` (PEM reports of the first wire format, each with its own OLH
seed: they cannot be binned into a table, and the decoder no longer reads them; such a campaign's fingerprint
differs from today's, whose PEM fields include ``hash_count``).

A window's aggregate is the days' aggregates merged (``estimators.kinds.heavy_hitters``).  No time of day and no
device is stored: a report id, its day and its payload only.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from client_sdk.kinds.heavy_hitters import HeavyHittersParams
from estimators.kinds.heavy_hitters import PemAggregate, SfpAggregate

from ...storage import CampaignVersion, StorageBase, register_migrations

KIND = "heavy_hitters"
IDS_PER_QUERY = 900  # report ids per IN (...) list: below SQLite's historical 999 variables
_TABLES = (
    """CREATE TABLE IF NOT EXISTS hh_seen (report_id TEXT PRIMARY KEY, campaign TEXT NOT NULL,
    fingerprint TEXT NOT NULL, day TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS hh_pem_reports (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    day TEXT NOT NULL, grp INTEGER NOT NULL, seed TEXT NOT NULL, y BIGINT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS idx_hh_pem_reports ON hh_pem_reports (campaign, fingerprint, day)",
    """CREATE TABLE IF NOT EXISTS hh_sketch (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL, day TEXT NOT NULL,
    grp INTEGER NOT NULL, cell BIGINT NOT NULL, total BIGINT NOT NULL,
    PRIMARY KEY (campaign, fingerprint, day, grp, cell))""",
    """CREATE TABLE IF NOT EXISTS hh_counts (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL, day TEXT NOT NULL,
    grp INTEGER NOT NULL, reports BIGINT NOT NULL, PRIMARY KEY (campaign, fingerprint, day, grp))""",
)


def create_tables(conn: Any, dialect: str) -> None:
    "Migration 1: the kind's four tables"
    for statement in _TABLES:
        conn.execute(statement)


def drop_pem_reports(conn: Any, dialect: str) -> None:
    "Migration 2: PEM reports are binned into hh_sketch (a bounded count table), no longer kept one by one"
    conn.execute("DROP INDEX IF EXISTS idx_hh_pem_reports")
    conn.execute("DROP TABLE IF EXISTS hh_pem_reports")


MIGRATIONS = register_migrations(KIND, ((1, create_tables), (2, drop_pem_reports)))


class HeavyHittersStore:
    "The kind's statements on one storage (its transactions are the storage's)"

    def __init__(self, storage: StorageBase) -> None:
        self.storage = storage

    def seen(self, report_ids: Sequence[str]) -> set[str]:
        "The ids among ``report_ids`` already accepted"
        found: set[str] = set()
        for start in range(0, len(report_ids), IDS_PER_QUERY):
            chunk = list(report_ids[start:start + IDS_PER_QUERY])
            marks = ", ".join("?" * len(chunk))
            rows = self.storage._all(f"SELECT report_id FROM hh_seen WHERE report_id IN ({marks})", chunk)
            found.update(row[0] for row in rows)
        return found

    def add(self, campaign: CampaignVersion, day: str, report_ids: Sequence[str], cells: np.ndarray) -> None:
        """Store the reports of one campaign version on ``day``: their ids and, counted into the day's tables, their
        checked payloads (cells: ``payload_cells``), inside the caller's transaction"""
        key = (campaign.name, campaign.fingerprint, day)
        self.storage._run_many("INSERT INTO hh_seen (report_id, campaign, fingerprint, day) VALUES (?, ?, ?, ?)",
                               list(zip(report_ids, *map(itertools.repeat, key))))
        aggregate = table_type(campaign.spec.params).from_cells(campaign.spec.params, cells)
        flat = aggregate.cells.reshape(aggregate.params.groups, -1)
        groups, positions = np.nonzero(flat)  # the non-zero cells of each group's table
        self.storage._run_many(
            "INSERT INTO hh_sketch (campaign, fingerprint, day, grp, cell, total) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (campaign, fingerprint, day, grp, cell) DO UPDATE SET total = hh_sketch.total + "
            "excluded.total", [(*key, int(g), int(c), int(flat[g, c])) for g, c in zip(groups, positions)])
        self.storage._run_many(
            "INSERT INTO hh_counts (campaign, fingerprint, day, grp, reports) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (campaign, fingerprint, day, grp) DO UPDATE SET reports = hh_counts.reports + "
            "excluded.reports", [(*key, g, int(count)) for g, count in enumerate(aggregate.counts) if count])

    def days(self, campaign: CampaignVersion, since: str | None, until: str | None) -> list[str]:
        "The days of the window with reports of the version"
        rows = self.storage._all("SELECT DISTINCT day FROM hh_seen WHERE campaign = ? AND fingerprint = ? "
                                 "ORDER BY day", (campaign.name, campaign.fingerprint))
        return [day for (day,) in rows if (not since or day >= since) and (not until or day <= until)]

    def aggregate(self, campaign: CampaignVersion, days: Iterable[str]) -> PemAggregate | SfpAggregate:
        "The days' aggregates merged"
        params: HeavyHittersParams = campaign.spec.params
        chosen = list(days)
        out = table_type(params)(params)
        flat = out.cells.reshape(params.groups, -1)
        for group, cell, total in self._window("hh_sketch", "grp, cell, total", campaign, chosen):
            flat[group, cell] += total
        for group, reports in self._window("hh_counts", "grp, reports", campaign, chosen):
            out.counts[group] += reports
        return out

    def _window(self, table: str, columns: str, campaign: CampaignVersion, days: list[str]) -> list[Any]:
        if not days:
            return []
        marks = ", ".join("?" * len(days))
        return self.storage._all(f"SELECT {columns} FROM {table} WHERE campaign = ? AND fingerprint = ? AND day IN "
                                 f"({marks})", (campaign.name, campaign.fingerprint, *days))


def table_type(params: HeavyHittersParams) -> type[PemAggregate] | type[SfpAggregate]:
    return PemAggregate if params.algorithm == "pem" else SfpAggregate
