"""Campaigns: create (admin), list and fetch specs (any key), estimates (admin).

Specs are immutable: posting a changed spec under an existing name creates the next version; posting an identical
one returns the existing version (200 instead of 201), so retries are safe.  Reading specs needs a key (ingest or
admin) so anonymous scanners cannot enumerate what is measured; devices hold an ingest key anyway.  A key scoped to
some campaigns (every public key is) lists only those and gets 403 for the others.
"""

from __future__ import annotations

import warnings

from flask import Blueprint, Response, current_app, g, jsonify, url_for

from client_sdk.errors import PrivacyWarning, SpecError
from client_sdk.spec import NAME_PATTERN

from ..auth import require, require_scope, utc_today
from ..cors import browser_route
from ..db import get_storage
from ..kinds import collector_kind
from ..problems import Problem, invalid
from ..storage import CampaignClosed, CampaignNotFound, CampaignVersion, VersionConflict
from .args import int_arg
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
            campaign, created = collector_kind(body).create_campaign(get_storage(), body, today())
        except SpecError as exc:
            raise invalid(exc.field, exc.reason) from None
        except VersionConflict as exc:
            raise Problem(409, str(exc), field="version") from None
        except CampaignClosed as exc:
            raise Problem(409, str(exc), slug="campaign-closed", title="Campaign closed", field="name") from None
    out = _with_lifetime(campaign, get_storage().closed_campaigns())
    out["warnings"] = [*(str(w.message) for w in caught if issubclass(w.category, PrivacyWarning)),
                       *collector_kind(campaign.spec).creation_notes(campaign)]
    response = jsonify(out)
    response.headers["Location"] = url_for("campaigns.get_campaign", name=campaign.name, version=campaign.version)
    return response, 201 if created else 200


LISTING_CACHE_SIZE = 8  # listings kept per process (a few KB each): the current one and a few earlier ones


@blueprint.get("/v1/campaigns")
@browser_route
@require("ingest", "admin", "shuffler")
def list_campaigns() -> Response:
    """The latest version of every campaign.

    Every device asks for it, so the answer's body is kept per process, keyed by everything it is made of: the
    day, each listed version (its name, number, fingerprint and creation day: the spec is immutable) and the
    closed campaigns, all read from the database on every request, so a new version or a closing shows at once.
    A listing with a campaign whose kind gives it a ``listing_cache_key`` other than ``()`` is not kept (a prio3
    campaign's aggregators' block comes from their own tables)."""
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
    if all(collector_kind(c.spec).listing_cache_key(c) == () for c in campaigns):
        if len(cache) >= LISTING_CACHE_SIZE:
            cache.clear()  # atomic, unlike evicting one entry while other threads may add theirs
        cache[cache_key] = response.get_data()
    return response


@blueprint.get("/v1/campaigns/<name>")
@browser_route
@require("ingest", "admin", "shuffler")
def get_campaign(name: str) -> Response:
    "One campaign's spec (latest version unless ?version=N), with the list of its versions"
    require_scope(g.api_key, name)  # before the lookup: a scoped key learns nothing of other campaigns
    campaign = _find(name, int_arg("version"))
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
    out.update(collector_kind(campaign.spec).api_fields(campaign))
    return out


@blueprint.get("/v1/campaigns/<name>/estimate")
@require("admin")
def estimate(name: str) -> Response:
    "The campaign's estimate: de-biased from the stored aggregates, or its latest release (its kind's answer)"
    campaign = _find(name, int_arg("version"))
    return collector_kind(campaign.spec).estimate_response(campaign)


def _find(name: str, version: int | None) -> CampaignVersion:
    if not NAME_PATTERN.fullmatch(name):
        raise Problem(404, f"no campaign {name!r}", field="name")
    try:
        return get_storage().get_campaign(name, version)
    except CampaignNotFound as exc:
        raise Problem(404, str(exc), field="version" if version else "name") from None
