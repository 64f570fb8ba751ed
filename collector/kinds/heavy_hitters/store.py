"""The heavy_hitters kind's own tables (SQLite or PostgreSQL, one SQL for both) and every statement on them.

* ``hh_seen``         every accepted report id, with its campaign version and UTC day (duplicates are refused)
* ``hh_pem_reports``  PEM: each report's group, OLH seed (32 hex characters) and hash value, per day.  OLH reports
                      carry a fresh hash seed each, so no fixed-size statistic summarises them before the candidates
                      are known (they depend on the previous level's result): the day's aggregate is its reports,
                      20 bytes of information each, merged by union (``PemAggregate``)
* ``hh_sketch``       SFP: per day and group the Count Mean Sketch's signed sums sum(1 - 2 bit), one row per
                      non-zero cell (row * width + column), added to in place (``INSERT ... ON CONFLICT DO UPDATE``)
* ``hh_counts``       SFP: per day and group the reports added to its sketch

A window's aggregate is the days' aggregates merged (``estimators.kinds.heavy_hitters``).  No time of day and no
device is stored: a report id, its day and its payload only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from client_sdk.kinds.heavy_hitters import HeavyHittersParams, PemReport, SfpReport
from client_sdk.mechanisms.hashing import seed_from_hex, seed_to_hex
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


MIGRATIONS = register_migrations(KIND, ((1, create_tables),))


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

    def add(self, campaign: CampaignVersion, day: str, reports: Sequence[tuple[str, PemReport | SfpReport]]) -> None:
        "Store ``reports`` (id, parsed report) of one campaign version on ``day`` (inside the caller's transaction)"
        key = (campaign.name, campaign.fingerprint, day)
        self.storage._run_many("INSERT INTO hh_seen (report_id, campaign, fingerprint, day) VALUES (?, ?, ?, ?)",
                               [(report_id, *key) for report_id, _ in reports])
        parsed = [report for _, report in reports]
        if campaign.spec.params.algorithm == "pem":
            self.storage._run_many(
                "INSERT INTO hh_pem_reports (campaign, fingerprint, day, grp, seed, y) VALUES (?, ?, ?, ?, ?, ?)",
                [(*key, r.group, seed_to_hex(r.a, r.b), r.y) for r in parsed])  # type: ignore[union-attr]
            return
        width = campaign.spec.params.sketch_width
        cells: Counter[tuple[int, int]] = Counter()
        counts: Counter[int] = Counter()
        for r in parsed:
            cells[(r.group, r.row * width + r.column)] += 1 - 2 * r.bit  # type: ignore[union-attr]
            counts[r.group] += 1
        self.storage._run_many(
            "INSERT INTO hh_sketch (campaign, fingerprint, day, grp, cell, total) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (campaign, fingerprint, day, grp, cell) DO UPDATE SET total = hh_sketch.total + "
            "excluded.total", [(*key, group, cell, total) for (group, cell), total in sorted(cells.items())])
        self.storage._run_many(
            "INSERT INTO hh_counts (campaign, fingerprint, day, grp, reports) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (campaign, fingerprint, day, grp) DO UPDATE SET reports = hh_counts.reports + "
            "excluded.reports", [(*key, group, count) for group, count in sorted(counts.items())])

    def days(self, campaign: CampaignVersion, since: str | None, until: str | None) -> list[str]:
        "The days of the window with reports of the version"
        rows = self.storage._all("SELECT DISTINCT day FROM hh_seen WHERE campaign = ? AND fingerprint = ? "
                                 "ORDER BY day", (campaign.name, campaign.fingerprint))
        return [day for (day,) in rows if (not since or day >= since) and (not until or day <= until)]

    def aggregate(self, campaign: CampaignVersion, days: Iterable[str]) -> PemAggregate | SfpAggregate:
        "The days' aggregates merged"
        params: HeavyHittersParams = campaign.spec.params
        chosen = list(days)
        if params.algorithm == "pem":
            return self._pem(campaign, params, chosen)
        return self._sfp(campaign, params, chosen)

    def _window(self, table: str, columns: str, campaign: CampaignVersion, days: list[str]) -> list[Any]:
        if not days:
            return []
        marks = ", ".join("?" * len(days))
        return self.storage._all(f"SELECT {columns} FROM {table} WHERE campaign = ? AND fingerprint = ? AND day IN "
                                 f"({marks})", (campaign.name, campaign.fingerprint, *days))

    def _pem(self, campaign: CampaignVersion, params: HeavyHittersParams, days: list[str]) -> PemAggregate:
        rows = self._window("hh_pem_reports", "grp, seed, y", campaign, days)
        groups = []
        for group in range(params.groups):
            mine = [(seed_from_hex(seed), y) for grp, seed, y in rows if grp == group]
            groups.append((np.array([a for (a, _), _ in mine], np.uint64), np.array([b for (_, b), _ in mine],
                                                                                   np.uint64),
                           np.array([y for _, y in mine], np.uint32)))
        return PemAggregate(params, groups)

    def _sfp(self, campaign: CampaignVersion, params: HeavyHittersParams, days: list[str]) -> SfpAggregate:
        assert params.sketch_depth is not None and params.sketch_width is not None
        out = SfpAggregate(params)
        flat = out.sums.reshape(params.groups, -1)
        for group, cell, total in self._window("hh_sketch", "grp, cell, total", campaign, days):
            flat[group, cell] += total
        for group, reports in self._window("hh_counts", "grp, reports", campaign, days):
            out.counts[group] += reports
        return out
