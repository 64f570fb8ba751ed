"""The quantiles kind, collector side: each report checked by the kind's codec (``QuantilesReport.decode``, the
one both ends use), the batch's reports aggregated and added to the day's mergeable aggregate in the kind's own
tables (:mod:`.store`), estimated from the window's merged aggregate (``estimators.kinds.quantiles``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import estimators
from client_sdk.errors import PayloadError
from client_sdk.kinds.quantiles import QuantilesReport
from estimators.errors import SourceError
from estimators.kinds.quantiles import QuantilesAggregate
from estimators.kinds.quantiles.kind import QUANTILES_ESTIMATES
from estimators.window import ReportData, finite_json

from ...storage import CampaignVersion, KindMigrations, StorageBase
from ..base import Accepted, CollectorKind, ReportItem, Window, register_collector_kind
from .store import MIGRATIONS, QuantilesStore, merged

if TYPE_CHECKING:
    from flask import Response

# Function-level imports: the web stack (collector.db, the kind's view hook in .api) only where a request is
# served; `ldp-telemetry report --db` loads the kinds without Flask (+0.2 s of start-up).


class QuantilesCampaigns(CollectorKind):
    "A number's distribution: per-day tree aggregates in the kind's own tables"

    name = "quantiles"

    def migrations(self) -> KindMigrations:
        return MIGRATIONS

    def accept_reports(self, items: Sequence[ReportItem], day: str) -> Accepted:
        "Check each payload (rejected by field name), drop ids seen before, add the rest to the day's aggregate"
        from ...db import get_storage

        return accept(QuantilesStore(get_storage()), items, day)

    def estimate_response(self, campaign: CampaignVersion) -> Response:
        from .api import estimate_response

        return estimate_response(campaign)

    def report_data_from_db(self, storage: StorageBase, campaign: CampaignVersion, window: Window) -> ReportData:
        days = QuantilesStore(storage).days(campaign.name, campaign.fingerprint, window.since, window.until)
        total = merged(campaign.spec.params, campaign.fingerprint, days)
        try:
            result = finite_json(QUANTILES_ESTIMATES.estimate(campaign.spec, total, window.confidence).to_json())
        except estimators.NoReports:
            raise SourceError(f"campaign {campaign.name!r} has no reports in this window") from None
        return ReportData(result, campaign.spec.to_dict(), window.since, window.until)


def accept(store: QuantilesStore, items: Sequence[ReportItem], day: str) -> Accepted:
    "The work of :meth:`QuantilesCampaigns.accept_reports` on ``store``, in one transaction"
    outcome = Accepted()
    with store.transaction():
        earlier = store.seen([report["report_id"] for _, report, _ in items])
        batches: dict[tuple[str, str], tuple[CampaignVersion, list[str], list[Any]]] = {}
        for index, report, campaign in items:
            report_id = report["report_id"]
            if report_id in earlier:
                outcome.duplicate += 1
                continue
            try:
                decoded = QuantilesReport.decode(campaign.spec.params, report["payload"])
            except PayloadError as error:
                outcome.rejected.append((index, report_id, error.field, error.reason))
                continue
            earlier.add(report_id)
            _, ids, payloads = batches.setdefault((campaign.name, campaign.fingerprint), (campaign, [], []))
            ids.append(report_id)
            payloads.append(decoded.encode())
        for campaign, ids, payloads in batches.values():
            params = campaign.spec.params
            aggregate = QuantilesAggregate.empty(params, campaign.fingerprint).with_reports(params, payloads)
            store.add(campaign.name, params, campaign.fingerprint, day, ids, aggregate)
            outcome.accepted += len(ids)
    return outcome


QUANTILES = register_collector_kind(QuantilesCampaigns())
