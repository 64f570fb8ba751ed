"""The repeated-collection kind, collector side: reports checked with the kind's codec, counted into one mergeable
aggregate per campaign version and period (its own tables), estimated as a series of periods.

Its tables (the kind's migrations, applied by every storage's ``migrate()``):

* ``repeated_aggregates``  per (campaign, fingerprint, period): the period's counts
  (``estimators.kinds.repeated.PeriodAggregate.to_json``), merged in place under the row's lock
* ``repeated_report_ids``  every accepted report id, so a retried upload is a duplicate and counts once

A report names its period (``{"period": ..., "answer": ...}``): it counts in that period, however late it arrives;
a period after the collector's current one is refused by field.  No time of receipt is stored.  A report's series
is the estimate's ``periods``, drawn once by the kind's own chart (with the central band): no per-day results.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from client_sdk.errors import PayloadError
from client_sdk.kinds.repeated import check_report, period_of
from estimators.errors import NoReports, SourceError
from estimators.kinds.repeated import PeriodAggregate, aggregate_from_json
from estimators.kinds.repeated.kind import REPEATED_ESTIMATES
from estimators.window import ReportData, finite_json

from ..storage import CampaignVersion, KindMigrations, StorageBase
from ..storage.kind_migrations import MigrationStep
from .base import Accepted, CollectorKind, ReportItem, Window, register_collector_kind

if TYPE_CHECKING:
    from flask import Response

# Function-level imports: the web stack and the request's storage (Flask) in the methods that serve a request only,
# as in local.py: `ldp-telemetry report --db` loads the kinds without Flask (+0.2 s of start-up).

KIND = "repeated"
IDS_PER_QUERY = 900  # report ids per IN (...) list: below SQLite's historical 999 variables
_TABLES = (
    """CREATE TABLE IF NOT EXISTS repeated_aggregates (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL,
    period TEXT NOT NULL, counts TEXT NOT NULL, PRIMARY KEY (campaign, fingerprint, period))""",
    """CREATE TABLE IF NOT EXISTS repeated_report_ids (report_id TEXT PRIMARY KEY, campaign TEXT NOT NULL,
    fingerprint TEXT NOT NULL, period TEXT NOT NULL)""",
)


def _create_tables(conn: Any, dialect: str) -> None:
    for statement in _TABLES:
        conn.execute(statement)


MIGRATIONS: tuple[tuple[int, MigrationStep], ...] = ((1, _create_tables),)


class RepeatedStore:
    "The kind's tables over a collector storage (SQLite or PostgreSQL): every statement on them"

    def __init__(self, storage: StorageBase) -> None:
        self.storage = storage
        self._for_update = " FOR UPDATE" if storage.dialect == "postgresql" else ""

    def known_ids(self, report_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(report_ids), IDS_PER_QUERY):
            chunk = list(report_ids[start:start + IDS_PER_QUERY])
            marks = ", ".join("?" * len(chunk))
            found |= {row[0] for row in self.storage._all(
                f"SELECT report_id FROM repeated_report_ids WHERE report_id IN ({marks})", chunk)}
        return found

    def add(self, campaign: CampaignVersion, period: str, report_ids: list[str], aggregate: PeriodAggregate) -> None:
        "Record the ids and merge ``aggregate`` into the period's (inside the caller's transaction)"
        self.storage._run_many("INSERT INTO repeated_report_ids (report_id, campaign, fingerprint, period) "
                               "VALUES (?, ?, ?, ?)",
                               [(rid, campaign.name, campaign.fingerprint, period) for rid in report_ids])
        key = (campaign.name, campaign.fingerprint, period)
        self.storage._run("INSERT INTO repeated_aggregates (campaign, fingerprint, period, counts) VALUES (?, ?, ?, ?) "
                          "ON CONFLICT (campaign, fingerprint, period) DO NOTHING",
                          (*key, json.dumps(PeriodAggregate(campaign.spec.params).to_json())))
        row = self.storage._one("SELECT counts FROM repeated_aggregates WHERE campaign = ? AND fingerprint = ? AND "
                                "period = ?" + self._for_update, key)
        merged = aggregate_from_json(campaign.spec.params, json.loads(row[0])).merge(aggregate)
        self.storage._run("UPDATE repeated_aggregates SET counts = ? WHERE campaign = ? AND fingerprint = ? AND "
                          "period = ?", (json.dumps(merged.to_json()), *key))

    def periods(self, campaign: CampaignVersion, since: str | None = None,
                until: str | None = None) -> list[tuple[str, PeriodAggregate]]:
        "The version's (period, aggregate) in [since, until] (labels compared as text: they sort in time order)"
        rows = self.storage._all("SELECT period, counts FROM repeated_aggregates WHERE campaign = ? AND "
                                 "fingerprint = ? ORDER BY period", (campaign.name, campaign.fingerprint))
        return [(period, aggregate_from_json(campaign.spec.params, json.loads(counts))) for period, counts in rows
                if (not since or period >= since) and (not until or period[:len(until)] <= until)]


class RepeatedCampaigns(CollectorKind):
    "Repeated collection: per-period aggregates in the kind's own tables"

    name = KIND

    def migrations(self) -> KindMigrations:
        return KindMigrations(KIND, MIGRATIONS)

    def accept_reports(self, items: Sequence[ReportItem], day: str) -> Accepted:
        from ..auth import clock_now
        from ..db import get_storage

        return accept(RepeatedStore(get_storage()), items, clock_now())

    def estimate_response(self, campaign: CampaignVersion) -> Response:
        "The series over [since, until] (period labels), the change between ``before`` and ``after``"
        from flask import jsonify, request

        from ..api.args import confidence_arg
        from ..db import get_storage
        from ..errors import Problem
        from ..problems import invalid

        since, until = request.args.get("since"), request.args.get("until")
        before, after = request.args.get("before"), request.args.get("after")
        if (before is None) != (after is None):
            raise invalid("before" if before is None else "after", "before and after name the two periods together")
        periods = RepeatedStore(get_storage()).periods(campaign, since, until)
        labels = {label for label, aggregate in periods if aggregate.reports}
        for field, label in (("before", before), ("after", after)):
            if label is not None and label not in labels:
                raise invalid(field, f"no reports in period {label[:40]!r} of this window")
        try:
            series = REPEATED_ESTIMATES.series(campaign.spec, periods, confidence_arg(),
                                               None if before is None or after is None else (before, after))
        except NoReports as exc:
            raise Problem(404, str(exc), slug="no-reports", title="No reports", field="since") from None
        window = {"version": campaign.version, "since": since, "until": until}
        return jsonify(finite_json({**series.to_json(), "window": window}))

    def report_data_from_db(self, storage: StorageBase, campaign: CampaignVersion, window: Window) -> ReportData:
        periods = RepeatedStore(storage).periods(campaign, window.since, window.until)
        try:
            result = finite_json(REPEATED_ESTIMATES.series(campaign.spec, periods, window.confidence).to_json())
        except NoReports as exc:
            raise SourceError(str(exc)) from None
        return ReportData(result, campaign.spec.to_dict(), window.since, window.until)


def accept(store: RepeatedStore, items: Sequence[ReportItem], now: float) -> Accepted:
    "Check each report (its period and answer, by field), drop duplicates, count the rest in one transaction"
    outcome = Accepted()
    groups: dict[tuple[str, str, str], tuple[CampaignVersion, list[str], list[Any]]] = {}
    for index, report, campaign in items:
        params = campaign.spec.params
        try:
            period, _, _ = check_report(params, report["payload"])
        except PayloadError as exc:
            outcome.rejected.append((index, report["report_id"], exc.field, exc.reason))
            continue
        except Exception:  # noqa: BLE001 (a malformed payload must never become a 500)
            outcome.rejected.append((index, report["report_id"], "payload", "has the wrong shape for this campaign"))
            continue
        if period > period_of(params, now):
            outcome.rejected.append((index, report["report_id"], "payload.period",
                                     f"is after the collector's current {params.period} ({period_of(params, now)})"))
            continue
        entry = groups.setdefault((campaign.name, campaign.fingerprint, period), (campaign, [], []))
        entry[1].append(report["report_id"])
        entry[2].append(report["payload"]["answer"])
    with store.storage.transaction():
        known = store.known_ids([rid for _, ids, _ in groups.values() for rid in ids])
        for (_, _, period), (campaign, ids, answers) in groups.items():
            fresh = [(rid, answer) for rid, answer in zip(ids, answers) if rid not in known]
            outcome.duplicate += len(ids) - len(fresh)
            if fresh:
                aggregate = PeriodAggregate(campaign.spec.params).add(answer for _, answer in fresh)
                store.add(campaign, period, [rid for rid, _ in fresh], aggregate)
                outcome.accepted += len(fresh)
    return outcome


REPEATED = register_collector_kind(RepeatedCampaigns())
