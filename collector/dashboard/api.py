"""The dashboard's two admin read routes: the campaign listing (from the stored sums: no estimate per campaign)
and one campaign's panel (its kind's report side lays it out: ``ReportKind.panel``, the code the static report
uses).  Everything else the page shows comes from the admin API as it is (close, collect, create, budget)."""

from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify

from estimators.errors import SourceError
from estimators.report.kinds import report_kind

from ..api.args import confidence_arg
from ..auth import require, utc_today
from ..db import get_storage
from ..errors import Problem
from ..kinds import Window, collector_kind
from ..kinds.local_rejections import rejection_counts
from ..release_ledger import budget_view
from ..reporting import with_budget
from ..storage import CampaignNotFound
from ..storage.models import CampaignVersion

blueprint = Blueprint("dashboard_api", __name__)


@blueprint.get("/v1/dashboard/campaigns")
@require("admin")
def campaign_summaries() -> Response:
    "Every campaign's latest version: kind, trust model, epsilon, state, reports so far and the last day with reports"
    storage = get_storage()
    closed = storage.closed_campaigns()
    totals = storage.report_totals()
    day = utc_today()
    rows = []
    for campaign in storage.list_campaigns():
        spec = campaign.spec
        n, last_day = totals.get(campaign.name, (0, None))
        state = "closed" if campaign.name in closed else "expired" if spec.expired_on(day) else "open"
        rows.append({"name": campaign.name, "version": campaign.version, "kind": spec.kind, "trust": spec.trust,
                     "mechanism": spec.mechanism, "epsilon": spec.epsilon, "state": state, "reports": n,
                     "last_day": last_day, "created_day": campaign.created_day,
                     "progress": _progress_path(campaign)})
    return jsonify({"campaigns": rows, "day": day})


@blueprint.get("/v1/campaigns/<name>/panel")
@require("admin")
def panel(name: str) -> Response:
    """The campaign's dashboard panel (``estimators.report.panel``): its estimate over all reports with the per-day
    series, laid out by its kind's report side, with the release ledger's figures and the rejected reports by
    reason (``collector.kinds.local_rejections``; also in the 404 of a campaign with no estimate yet)"""
    confidence = confidence_arg()
    storage = get_storage()
    try:
        campaign = storage.get_campaign(name)
    except CampaignNotFound:
        raise Problem(404, f"no campaign {name[:100]!r}", field="name") from None
    try:
        data = collector_kind(campaign.spec).report_data_from_db(storage, campaign, Window(None, None, confidence,
                                                                                           True))
    except SourceError as exc:
        raise Problem(404, str(exc), field="name", slug="no-estimate", title="No estimate yet",
                      rejections=rejection_counts(storage, campaign.name), progress=_progress_path(campaign)) from None
    data = with_budget(data, budget_view(storage, campaign))
    return jsonify({**report_kind(data.estimate).panel(data), "progress": _progress_path(campaign),
                    "rejections": rejection_counts(storage, campaign.name)})


def _progress_path(campaign: CampaignVersion) -> str | None:
    "The leader's route of the progress of the campaign's batches (its kind's), when this app serves it"
    return collector_kind(campaign.spec).progress_route(campaign) if "dist_leader" in current_app.blueprints else None
