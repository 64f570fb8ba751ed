"""Step 3, the collector side: a bins campaign's reports go to the kind's own table, ``bins_reports``, made by the
kind's migration (registered with the kind, applied by every storage's ``migrate()``); its estimate and its report
data are read from there."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from collector.kinds import Accepted, ApiGet, CollectorKind, ReportItem, Window, register_collector_kind
from collector.storage import CampaignVersion, KindMigrations, StorageBase, register_migrations
from estimators.errors import NoReports, SourceError
from estimators.window import ReportData

from . import bins_estimates
from .bins_device import NAME

TABLE = "bins_reports"
MARKS = {"sqlite": "?", "postgresql": "%s"}


def create_table(conn: Any, dialect: str) -> None:
    "Migration 1: one row per accepted report (its campaign version, the day it arrived and its bin)"
    conn.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (campaign TEXT NOT NULL, fingerprint TEXT NOT NULL, "
                 "report_id TEXT NOT NULL, day TEXT NOT NULL, bin INTEGER NOT NULL, PRIMARY KEY (campaign, report_id))")


def counts(storage: StorageBase, campaign: CampaignVersion, since: str | None = None,
           until: str | None = None) -> dict[int, int]:
    "Reports per bin of the campaign version in [since, until]"
    mark = MARKS[storage.dialect]
    query = f"SELECT bin, COUNT(*) FROM {TABLE} WHERE campaign = {mark} AND fingerprint = {mark}"
    args: list[Any] = [campaign.name, campaign.fingerprint]
    for bound, operator in ((since, ">="), (until, "<=")):
        if bound:
            query += f" AND day {operator} {mark}"
            args.append(bound)
    with storage.transaction() as conn:
        return {int(bin_): int(count) for bin_, count in conn.execute(query + " GROUP BY bin", args).fetchall()}


class BinsCampaigns(CollectorKind):
    "Collector side of the bins kind"

    name = NAME

    def migrations(self) -> KindMigrations:
        return register_migrations(NAME, [(1, create_table)])

    def accept_reports(self, items: Sequence[ReportItem], day: str) -> Accepted:
        from collector.db import get_storage  # the request's storage (this runs inside POST /v1/reports)

        storage, outcome = get_storage(), Accepted()
        mark = MARKS[storage.dialect]
        insert = (f"INSERT INTO {TABLE} (campaign, fingerprint, report_id, day, bin) VALUES ({', '.join([mark] * 5)}) "
                  "ON CONFLICT DO NOTHING")
        with storage.transaction() as conn:
            for index, report, campaign in items:
                payload = report.get("payload")
                bin_ = payload.get("bin") if isinstance(payload, dict) else None
                if set(payload or ()) != {"bin"} or not isinstance(bin_, int) or isinstance(bin_, bool) \
                        or not 0 <= bin_ < campaign.spec.params.bins:
                    outcome.rejected.append((index, report["report_id"], "payload",
                                             f"must be {{\"bin\": an integer in [0, {campaign.spec.params.bins})}}"))
                    continue
                inserted = conn.execute(insert, (campaign.name, campaign.fingerprint, report["report_id"], day, bin_))
                if inserted.rowcount == 1:
                    outcome.accepted += 1
                else:
                    outcome.duplicate += 1
        return outcome

    def estimate_response(self, campaign: CampaignVersion) -> Any:
        from flask import jsonify

        from collector.api.args import confidence_arg
        from collector.db import get_storage
        from collector.errors import Problem

        try:
            estimate = bins_estimates.BINS_ESTIMATES.estimate(campaign.spec, counts(get_storage(), campaign),
                                                              confidence_arg())
        except NoReports as exc:
            raise Problem(404, str(exc), slug="no-reports", title="No reports") from None
        return jsonify(estimate.to_json())

    def report_data_from_db(self, storage: StorageBase, campaign: CampaignVersion, window: Window) -> ReportData:
        source = counts(storage, campaign, window.since, window.until)
        try:
            result = bins_estimates.BINS_ESTIMATES.estimate(campaign.spec, source, window.confidence).to_json()
        except NoReports as exc:
            raise SourceError(str(exc)) from None
        return ReportData(result, campaign.spec.to_dict(), window.since, window.until)

    def report_data_from_api(self, get: ApiGet, base: str, resource: Any, spec_json: dict | None,
                             window: Window, daily_top: int | None) -> ReportData:
        return ReportData(get(base + "/estimate", {"confidence": window.confidence}), spec_json, window.since,
                          window.until)


BINS_CAMPAIGNS = register_collector_kind(BinsCampaigns())
