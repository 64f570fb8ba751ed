"""The quantiles kind's view hook (an HTTP module: it answers the Flask response and chooses the status):
GET /v1/campaigns/<name>/estimate over [since, until] at ``confidence``."""

from __future__ import annotations

from flask import Response, jsonify

from estimators.errors import NoReports
from estimators.kinds.quantiles.kind import QUANTILES_ESTIMATES
from estimators.window import finite_json

from ...api.args import confidence_arg, day_arg
from ...db import get_storage
from ...errors import Problem
from ...problems import invalid
from ...storage import CampaignVersion
from .store import QuantilesStore, merged


def estimate_response(campaign: CampaignVersion) -> Response:
    "The window's estimate (CDF with band, histogram, quantiles, ranges' building blocks, mean, baselines)"
    confidence = confidence_arg()
    since, until = day_arg("since"), day_arg("until")
    if since and until and since > until:
        raise invalid("since", "must not be after until")
    days = QuantilesStore(get_storage()).days(campaign.name, campaign.fingerprint, since, until)
    total = merged(campaign.spec.params, campaign.fingerprint, days)
    try:
        result = QUANTILES_ESTIMATES.estimate(campaign.spec, total, confidence).to_json()
    except NoReports:
        raise Problem(404, f"campaign {campaign.name!r} version {campaign.version} has no reports in this window",
                      slug="no-reports", title="No reports", field="since") from None
    window = {"version": campaign.version, "since": since, "until": until}
    return jsonify({**finite_json(result), "window": window})
