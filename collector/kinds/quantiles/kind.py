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
from ..base import Accepted, CollectorKind, Peers, ReportItem, Window, register_collector_kind
from ..distributed import DISTRIBUTED, in_window
from .store import MIGRATIONS, QuantilesStore, merged

if TYPE_CHECKING:
    from flask import Response

# Function-level imports: the web stack (collector.db, the kind's view hook in .api) only where a request is
# served; `ldp-telemetry report --db` loads the kinds without Flask (+0.2 s of start-up).


def _distributed(spec: Any) -> bool:
    "A campaign (or its JSON) whose trust is distributed: a leader and a helper hold it, as a prio3 campaign's"
    return (spec.get("trust") if isinstance(spec, dict) else getattr(spec, "trust", None)) == "distributed"


class QuantilesCampaigns(CollectorKind):
    """A number's distribution: per-day tree aggregates in the kind's own tables; with trust "distributed" the
    buckets' Prio3 histogram, provisioned, aggregated and released by the leader and the helper as a prio3
    campaign's (``collector.kinds.distributed``), estimated by ``estimators.kinds.quantiles.distributed``"""

    name = "quantiles"

    def migrations(self) -> KindMigrations:
        return MIGRATIONS

    def listing_cache_key(self, campaign: CampaignVersion) -> tuple | None:
        return DISTRIBUTED.listing_cache_key(campaign) if _distributed(campaign.spec) else ()

    def create_campaign(self, storage: StorageBase, body: dict, day: str) -> tuple[CampaignVersion, bool]:
        if _distributed(body):
            return DISTRIBUTED.create_campaign(storage, body, day)
        return super().create_campaign(storage, body, day)

    def provision_campaign(self, storage: StorageBase, body: dict, day: str,
                           peers: Peers) -> tuple[CampaignVersion, bool, dict]:
        if _distributed(body):
            return DISTRIBUTED.provision_campaign(storage, body, day, peers)
        return super().provision_campaign(storage, body, day, peers)

    def api_fields(self, campaign: CampaignVersion) -> dict:
        return DISTRIBUTED.api_fields(campaign) if _distributed(campaign.spec) else {}

    def accept_reports(self, items: Sequence[ReportItem], day: str) -> Accepted:
        "Check each payload (rejected by field name), drop ids seen before, add the rest to the day's aggregate"
        from ...db import get_storage

        shared = [item for item in items if _distributed(item[2].spec)]
        local = [item for item in items if not _distributed(item[2].spec)]
        outcome = accept(QuantilesStore(get_storage()), local, day) if local else Accepted()
        if shared:
            sealed = DISTRIBUTED.accept_reports(shared, day)
            outcome.accepted += sealed.accepted
            outcome.duplicate += sealed.duplicate
            outcome.rejected.extend(sealed.rejected)
        return outcome

    def estimate_response(self, campaign: CampaignVersion) -> Response:
        if _distributed(campaign.spec):
            from flask import jsonify

            from ...api.args import confidence_arg
            from ...distributed.api import dist_store

            releases = [r for r in dist_store().releases(campaign.name) if r["fingerprint"] == campaign.fingerprint]
            return jsonify(finite_json(distributed_estimate(campaign.spec, releases, confidence_arg())))
        from .api import estimate_response

        return estimate_response(campaign)

    def report_data_from_db(self, storage: StorageBase, campaign: CampaignVersion, window: Window) -> ReportData:
        if _distributed(campaign.spec):
            from ...distributed.store import DistStore  # the leader's tables: distributed campaigns only

            releases = [r for r in DistStore(storage).releases(campaign.name)
                        if r.get("fingerprint") == campaign.spec.fingerprint]
            chosen = in_window(releases, window.since, window.until)
            return ReportData(finite_json(distributed_estimate(campaign.spec, chosen, window.confidence)),
                              campaign.spec.to_dict(), window.since, window.until)
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


def distributed_estimate(spec: Any, releases: Sequence[dict], confidence: float) -> dict:
    "The estimate of a distributed campaign's releases (SourceError when there is none, or one is not the spec's)"
    from estimators.kinds.quantiles.distributed import estimate_releases

    if not releases:
        raise SourceError(f"campaign {spec.name!r} has no release in this window: collect a batch first "
                          "(ldp-telemetry campaign collect)")
    try:
        return estimate_releases(spec, releases, confidence)
    except ValueError as exc:
        raise SourceError(f"cannot estimate from the releases: {exc}") from None


QUANTILES = register_collector_kind(QuantilesCampaigns())
