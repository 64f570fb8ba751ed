"""The heavy_hitters kind's HTTP answers: GET /v1/campaigns/<name>/estimate, its problems."""

from __future__ import annotations

from flask import Response, jsonify

from estimators.errors import SourceError

from ...api.args import confidence_arg, day_arg
from ...db import get_storage
from ...errors import Problem
from ...problems import invalid
from ...storage import CampaignVersion


def estimate_response(campaign: CampaignVersion) -> Response:
    "The discovered strings of [since, until] (all days by default); 404 naming ``since`` when it has no reports"
    confidence = confidence_arg()
    since, until = day_arg("since"), day_arg("until")
    if since and until and since > until:
        raise invalid("since", "must not be after until")
    # the kind's package imports this module in its view hook: imported here, there is no circle at load time
    from . import window_estimate

    try:
        result = window_estimate(get_storage(), campaign, since, until, confidence)
    except SourceError:
        raise Problem(404, f"campaign {campaign.name!r} version {campaign.version} has no reports in this window",
                      slug="no-reports", title="No reports", field="since") from None
    return jsonify({**result, "window": {"version": campaign.version, "since": since, "until": until}})
