"""Campaigns: create (admin), list and fetch specs (any key), estimates (admin).

Specs are immutable: posting a changed spec under an existing name creates the next version; posting an identical
one returns the existing version (200 instead of 201), so retries are safe.  Reading specs needs a key (ingest or
admin) so anonymous scanners cannot enumerate what is measured; devices hold an ingest key anyway.  A key scoped to
some campaigns (every public key is) lists only those and gets 403 for the others.
"""

from __future__ import annotations

import datetime as dt
import warnings
from typing import Any

from flask import Blueprint, Response, current_app, g, jsonify, request, url_for

import estimators
from client_sdk.errors import PrivacyWarning, SpecError
from client_sdk.spec import NAME_PATTERN
from estimators.window import finite_json, window_estimate

from ..auth import require, require_scope, utc_today
from ..cors import browser_route
from ..db import get_storage
from ..problems import Problem, invalid
from ..storage import CampaignClosed, CampaignNotFound, CampaignVersion, VersionConflict
from .body import read_json

blueprint = Blueprint("campaigns", __name__)
MAX_SPEC_BYTES = 64 * 1024 * 1024  # a domain may have up to 2**20 entries


def today() -> str:
    "The UTC day, YYYY-MM-DD"
    return utc_today()


@blueprint.post("/v1/campaigns")
@require("admin")
def create_campaign() -> tuple[Response, int]:
    "Create a campaign, or the next version of one"
    body = read_json(min(MAX_SPEC_BYTES, int(current_app.config["MAX_BODY_BYTES"])))
    if not isinstance(body, dict):
        raise invalid("body", "must be a JSON object: the campaign spec")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PrivacyWarning)
        try:
            if body.get("trust") == "distributed":
                # imported here: a standalone collector loads no distributed module (+166 ms, 189 modules per worker)
                from ..distributed import api as distributed_api

                campaign, created = distributed_api.create_campaign(body, today())
            else:
                campaign, created = get_storage().create_campaign(body, today())
        except SpecError as exc:
            raise invalid(exc.field, exc.reason) from None
        except VersionConflict as exc:
            raise Problem(409, str(exc), field="version") from None
        except CampaignClosed as exc:
            raise Problem(409, str(exc), slug="campaign-closed", title="Campaign closed", field="name") from None
    out = _with_lifetime(campaign, get_storage().closed_campaigns())
    out["warnings"] = [str(w.message) for w in caught if issubclass(w.category, PrivacyWarning)]
    response = jsonify(out)
    response.headers["Location"] = url_for("campaigns.get_campaign", name=campaign.name, version=campaign.version)
    return response, 201 if created else 200


LISTING_CACHE_SIZE = 8  # listings kept per process (a few KB each): the current one and a few earlier ones


@blueprint.get("/v1/campaigns")
@browser_route
@require("ingest", "admin")
def list_campaigns() -> Response:
    """The latest version of every campaign.

    Every device asks for it, so the answer's body is kept per process, keyed by everything it is made of: the
    day, each listed version (its name, number, fingerprint and creation day: the spec is immutable) and the
    closed campaigns, all read from the database on every request, so a new version or a closing shows at once.
    A listing with a distributed campaign is not kept (its aggregators' block comes from their own tables)."""
    storage = get_storage()
    closed = storage.closed_campaigns()
    key = g.api_key
    campaigns = [c for c in storage.list_campaigns() if key.may_use(c.name)]
    cache_key = (today(), tuple((c.name, c.version, c.fingerprint, c.created_day) for c in campaigns),
                 tuple(sorted(closed.items())))
    cache: dict[tuple, bytes] = current_app.extensions.setdefault("ldp_listing_cache", {})
    body = cache.get(cache_key)
    if body is not None:
        return current_app.response_class(body, mimetype="application/json")
    response = jsonify({"campaigns": [_with_lifetime(c, closed) for c in campaigns]})
    if all(getattr(c.spec, "trust", "local") != "distributed" for c in campaigns):
        if len(cache) >= LISTING_CACHE_SIZE:
            cache.clear()  # atomic, unlike evicting one entry while other threads may add theirs
        cache[cache_key] = response.get_data()
    return response


@blueprint.get("/v1/campaigns/<name>")
@browser_route
@require("ingest", "admin")
def get_campaign(name: str) -> Response:
    "One campaign's spec (latest version unless ?version=N), with the list of its versions"
    require_scope(g.api_key, name)  # before the lookup: a scoped key learns nothing of other campaigns
    campaign = _find(name, _int_arg("version"))
    versions = [c.version for c in get_storage().campaign_versions(name)]
    return jsonify({**_with_lifetime(campaign, get_storage().closed_campaigns()), "versions": versions})


@blueprint.post("/v1/campaigns/<name>/close")
@require("admin")
def close_campaign(name: str) -> Response:
    "Close a campaign: devices stop recording it, its reports are rejected, its estimates stay available"
    _find(name, None)
    get_storage().close_campaign(name, today())
    return jsonify({**_with_lifetime(_find(name, None), get_storage().closed_campaigns()),
                    "versions": [c.version for c in get_storage().campaign_versions(name)]})


def _with_lifetime(campaign: CampaignVersion, closed: dict[str, str]) -> dict:
    """The campaign's API form with ``closed`` (and ``closed_day``) and ``expired``, which devices read"""
    out = campaign.to_dict()
    out["closed"] = campaign.name in closed
    if out["closed"]:
        out["closed_day"] = closed[campaign.name]
    out["expires"] = campaign.spec.expires
    out["expired"] = campaign.spec.expired_on(today())
    if getattr(campaign.spec, "trust", "local") == "distributed":
        # imported here: a standalone collector loads no distributed module (+166 ms, 189 modules per worker)
        from ..distributed import api as distributed_api

        block = distributed_api.aggregators_block(campaign)
        if block is not None:
            out["aggregators"] = block
    return out


@blueprint.get("/v1/campaigns/<name>/estimate")
@require("admin")
def estimate(name: str) -> Response:
    "De-biased estimate from the stored aggregates, over [since, until] or per day"
    campaign = _find(name, _int_arg("version"))
    if getattr(campaign.spec, "trust", "local") == "distributed":
        # imported here: a standalone collector loads no distributed module (+166 ms, 189 modules per worker)
        from ..distributed import api as distributed_api

        return jsonify(finite_json(distributed_api.estimate(campaign, _confidence())))
    _require_estimable(campaign)
    confidence = _confidence()
    since, until = _day_arg("since"), _day_arg("until")
    if since and until and since > until:
        raise invalid("since", "must not be after until")
    granularity = request.args.get("granularity", "total")
    if granularity not in ("total", "day"):
        raise invalid("granularity", "must be 'total' or 'day'")
    storage = get_storage()
    window = {"version": campaign.version, "since": since, "until": until}
    if granularity == "total":
        aggregate = storage.read_aggregate(campaign, since, until)
        return jsonify({**_estimate(campaign, aggregate, confidence), "window": window})
    days = storage.aggregates_by_day(campaign, since, until)
    limit = int(current_app.config["MAX_ESTIMATE_DAYS"])
    if len(days) > limit:
        raise invalid("granularity", f"window has {len(days)} days; per-day estimates answer at most {limit}")
    if not days:
        raise Problem(404, f"campaign {name!r} version {campaign.version} has no reports in this window",
                      slug="no-reports", title="No reports", field="since")
    top = _int_arg("top")
    if top is not None:  # slim days: the top values of the window, and only the fields a per-day plot needs
        return jsonify({"campaign": name, "version": campaign.version, "window": window, "top": top,
                        "days": _slim_days(campaign, days, confidence, top)})
    return jsonify({"campaign": name, "version": campaign.version, "window": window,
                    "days": [{"day": day, **_estimate(campaign, agg, confidence)} for day, agg in days]})


SLIM_FIELDS = ("kind", "n", "confidence", "mean", "std_error", "ci_low", "ci_high")
SLIM_ROW_FIELDS = ("value", "estimate", "std_error", "ci_low", "ci_high")


def _slim_days(campaign: CampaignVersion, days: list, confidence: float, top: int) -> list[dict]:
    "Per day: n, and the estimate, SE and CI of the ``top`` values largest over the whole window (or the mean)"
    total = days[0][1]
    for _, aggregate in days[1:]:
        total = total.merge(aggregate)
    keep = None
    window = _estimate_object(campaign, total, confidence)
    if hasattr(window, "estimates"):  # frequencies: rows straight from the arrays, never the full d-row dict
        keep = sorted(sorted(range(len(window.estimates)), key=lambda i: -window.estimates[i])[:top])
    out = []
    for day, aggregate in days:
        if keep is None:
            full = _estimate(campaign, aggregate, confidence)
            slim = {"day": day, **{k: full[k] for k in SLIM_FIELDS if k in full}}
            rows = full.get("values")
            if isinstance(rows, list):
                ranked = sorted(rows, key=lambda row: -(row.get("estimate") or 0.0))[:top]
                slim["values"] = [{k: row.get(k) for k in SLIM_ROW_FIELDS} for row in ranked]
        else:
            result = _estimate_object(campaign, aggregate, confidence)
            slim = {"day": day, "kind": "frequency", "n": int(result.n), "confidence": result.confidence,
                    "values": [dict(zip(SLIM_ROW_FIELDS, (result.values[i], float(result.estimates[i]),
                                                         float(result.std_errors[i]), float(result.ci_low[i]),
                                                         float(result.ci_high[i])))) for i in keep]}
        out.append(finite_json(slim))
    return out


def _estimate_object(campaign: CampaignVersion, aggregate: estimators.Aggregate, confidence: float) -> Any:
    try:
        return estimators.estimate_aggregate(campaign.spec, aggregate, confidence=confidence)
    except estimators.NoReports:
        raise Problem(404, f"campaign {campaign.name!r} version {campaign.version} has no reports in this window",
                      slug="no-reports", title="No reports", field="since") from None


def _require_estimable(campaign: CampaignVersion) -> None:
    "409 for a Bloom-filter RAPPOR campaign without candidates: there is nothing to decode against"
    spec = campaign.spec
    if spec.mechanism == "rappor" and spec.rappor is not None and spec.rappor.encoding == "bloom" \
            and not spec.candidates:
        raise Problem(409, f"campaign {campaign.name!r} version {campaign.version} has no candidates: Bloom-filter "
                           "RAPPOR is decoded against a candidate list; post the spec again with 'candidates' "
                           "(a new version)", slug="candidates-required", title="Candidates required",
                      field="candidates")


def _estimate(campaign: CampaignVersion, aggregate: estimators.Aggregate, confidence: float) -> dict:
    try:
        return window_estimate(campaign.spec, aggregate, confidence)
    except estimators.NoReports:
        raise Problem(404, f"campaign {campaign.name!r} version {campaign.version} has no reports in this window",
                      slug="no-reports", title="No reports", field="since") from None


def _find(name: str, version: int | None) -> CampaignVersion:
    if not NAME_PATTERN.fullmatch(name):
        raise Problem(404, f"no campaign {name!r}", field="name")
    try:
        return get_storage().get_campaign(name, version)
    except CampaignNotFound as exc:
        raise Problem(404, str(exc), field="version" if version else "name") from None


def _int_arg(name: str) -> int | None:
    raw = request.args.get(name)
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 10) or not 1 <= int(raw) <= 2**31:
        raise invalid(name, "must be a positive integer")
    return int(raw)


def _confidence() -> float:
    raw = request.args.get("confidence", "0.95")
    try:
        value = float(raw)
    except ValueError:
        raise invalid("confidence", "must be a number strictly between 0 and 1") from None
    if not 0 < value < 1:
        raise invalid("confidence", "must be a number strictly between 0 and 1")
    return value


def _day_arg(name: str) -> str | None:
    raw = request.args.get(name)
    if raw is None or raw == "":
        return None
    try:
        return dt.date.fromisoformat(raw).isoformat() if len(raw) == 10 else _bad_day(name)
    except ValueError:
        return _bad_day(name)


def _bad_day(name: str) -> str:
    raise invalid(name, "must be a UTC date YYYY-MM-DD")
