"""HTTP endpoints of the two aggregators, and the hooks the collector's own views call for distributed campaigns.

Blueprints: ``public`` (both roles: ``GET /v1/hpke_config``, no key), ``peer`` (the helper: ``/v1/peer/...``, the
aggregator-to-aggregator token ``PEER_TOKEN``), ``leader`` (``POST /v1/campaigns/<name>/collect`` and
``GET /v1/campaigns/<name>/releases``, admin key).
"""

from __future__ import annotations

import hmac
import time
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, request

from client_sdk.distributed_messages import ProtocolError, check_batch
from client_sdk.errors import ShareRejected, SpecError
from client_sdk.spec import NAME_PATTERN
from estimators import NoReports
from estimators.distributed.release import estimate_release

from ..api.body import read_json
from ..auth import clock_now, require, too_many, utc_today
from ..cors import browser_route
from ..db import get_storage
from ..problems import Problem, invalid, problem_response
from ..storage import CampaignNotFound, CampaignVersion, RateLimited, RateRule
from . import helper, hpke_keys, leader
from .leader.campaigns import _VDAF_CACHE
from .peer import FlaskTransport, PeerClient, PeerRefused, PeerUnavailable
from .store import DistStore

public = Blueprint("dist_public", __name__)
peer = Blueprint("dist_peer", __name__)
leader_api = Blueprint("dist_leader", __name__)
PEER_BUCKET = "peer"  # the rate bucket of the peer token (API keys' buckets are named by their hashes)


def role() -> str:
    return str(current_app.config.get("ROLE", "standalone"))


def dist_store() -> DistStore:
    return DistStore(get_storage())


def overlap_days() -> int:
    "Days an older HPKE key still opens reports after its successor was made (``serve --hpke-overlap-days``)"
    return int(current_app.config.get("HPKE_OVERLAP_DAYS", hpke_keys.DEFAULT_OVERLAP_DAYS))


def peer_client() -> PeerClient:
    "The leader's client to its helper (a test may put a transport in app.extensions['ldp_peer_transport'])"
    transport = current_app.extensions.get("ldp_peer_transport")
    token = str(current_app.config.get("PEER_TOKEN", ""))
    if transport is not None:
        return PeerClient(transport if not hasattr(transport, "open") else FlaskTransport(transport), token,
                          retries=0)
    url = str(current_app.config.get("HELPER_URL", ""))
    if not url:
        raise Problem(409, "this leader has no HELPER_URL configured", slug=ProtocolError.HELPER_NOT_CONFIGURED,
                      field="HELPER_URL")
    return PeerClient.for_url(url, token, retries=1, timeout=float(current_app.config["PEER_TIMEOUT"]))


# The HTTP status of each problem the helper's protocol code refuses a request with (helper.PeerProblem)
PEER_STATUS: dict[str, int] = {
    ProtocolError.INVALID_FIELD: 400, ProtocolError.UNKNOWN_CAMPAIGN: 404, ProtocolError.VERIFY_KEY_MISMATCH: 409,
    ProtocolError.JOB_MISMATCH: 409, ProtocolError.BATCH_OPEN: 409, ProtocolError.BATCH_COLLECTED: 409,
    ProtocolError.BATCH_MISMATCH: 409, ProtocolError.BATCH_TOO_SMALL: 409,
}
# ... and of each problem of a collection (leader.CollectError): the helper's faults are 502 (bad gateway), its
# absence 503, the batch's state 409
COLLECT_STATUS: dict[str, int] = {
    ProtocolError.INVALID_FIELD: 400, ProtocolError.NOT_DISTRIBUTED: 409, ProtocolError.BATCH_OPEN: 409,
    ProtocolError.BATCH_COLLECTED: 409, ProtocolError.BATCH_TOO_SMALL: 409, ProtocolError.INTERNAL: 500,
    ProtocolError.BATCH_MISMATCH: 502, ProtocolError.JOB_REFUSED: 502, ProtocolError.HELPER_UNAVAILABLE: 503,
    ProtocolError.BUSY: 503,
}


def collect_status(exc: leader.CollectError) -> int:
    "The answer to a collection that cannot proceed; a refusal of the helper: 409 if a conflict there, else 502"
    if exc.helper_refusal is not None:
        return 409 if exc.helper_refusal.status == 409 else 502
    return COLLECT_STATUS[exc.slug]


@peer.errorhandler(helper.PeerProblem)
def _peer_problem(exc: helper.PeerProblem) -> Response:
    "A refusal of the helper's protocol code, as problem+json (every peer view raises these)"
    return problem_response(Problem(PEER_STATUS[exc.slug], exc.detail, slug=exc.slug, field=exc.field))


# -- hooks for the collector's views ----------------------------------------------------------------------------
def create_campaign(body: dict, day: str) -> tuple[CampaignVersion, bool]:
    "POST /v1/campaigns with a distributed spec"
    if role() != "leader":
        raise Problem(409, f"a distributed campaign is created on its leader; this collector runs as {role()!r} "
                           "(serve --role leader --helper-url ...)", slug=ProtocolError.DISTRIBUTED_NEEDS_LEADER,
                      title="Distributed campaign needs a leader", field="trust")
    client = peer_client()
    store = dist_store()
    try:
        return leader.provision_campaign(get_storage(), store, client, str(current_app.config.get("HELPER_URL")),
                                         body, day)
    except SpecError as exc:
        raise invalid(exc.field, exc.reason) from None
    except PeerUnavailable as exc:
        raise Problem(503, f"the helper could not be provisioned ({exc}); nothing was created here, retry",
                      slug=ProtocolError.HELPER_UNAVAILABLE, headers={"Retry-After": "10"},
                      field="HELPER_URL") from None
    except PeerRefused as exc:
        raise Problem(502, f"the helper refused the campaign: {exc.detail}", slug=ProtocolError.HELPER_REFUSED,
                      field="HELPER_URL") from None


def aggregators_block(campaign: CampaignVersion) -> dict | None:
    if role() != "leader":
        return None
    return leader.aggregators_block(dist_store(), campaign)


def ingest(items: list[tuple[int, dict, CampaignVersion]], day: str) -> leader.UploadResult:
    "Distributed reports of a POST /v1/reports (index in the batch, report, campaign version)"
    if role() != "leader":
        result = leader.UploadResult()
        reason = "is a distributed campaign: it takes reports on its leader only"
        result.rejected = [(i, r["report_id"], "campaign", reason) for i, r, _ in items]
        return result
    return leader.accept_reports(dist_store(), items, day, overlap_days(), now=clock_now())


def estimate(campaign: CampaignVersion, confidence: float) -> dict:
    "The estimate of the campaign's latest release (?batch=DAY for another)"
    store = dist_store()
    releases = [r for r in store.releases(campaign.name) if r["fingerprint"] == campaign.fingerprint]
    batch = request.args.get("batch")
    if batch is not None:
        releases = [r for r in releases if r["batch"] == batch]
    if not releases:
        raise Problem(409, f"campaign {campaign.name!r} version {campaign.version} has no release yet: collect a "
                           "batch first (POST /v1/campaigns/<name>/collect)", slug=ProtocolError.NO_RELEASE,
                      title="No release", field="batch")
    release = releases[-1]
    try:
        return dict(estimate_release(campaign.spec, release, confidence=confidence))
    except NoReports:
        raise Problem(404, f"the release of batch {release['batch']} holds no reports", slug=ProtocolError.NO_REPORTS,
                      field="batch") from None
    except ValueError as exc:  # e.g. a Prio3 type without an estimator: the release itself stays available
        raise Problem(409, f"no estimate for this release ({exc}); GET /v1/campaigns/{campaign.name}/releases "
                           "has it", slug=ProtocolError.NO_ESTIMATOR, field="prio3") from None


# -- public -----------------------------------------------------------------------------------------------------
@public.get("/v1/hpke_config")
@browser_route  # a page's device fetches the helper's config from the helper itself (sdk-js)
def hpke_config() -> Response:
    "This aggregator's HPKE configs, newest first (no key needed: devices and the leader read them)"
    return jsonify({"configs": hpke_keys.configs(dist_store(), utc_today(), overlap_days())})


# -- peer (helper) ------------------------------------------------------------------------------------------------
def _require_peer() -> None:
    expected = str(current_app.config.get("PEER_TOKEN", ""))
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if not expected:
        raise Problem(401, "this helper has no PEER_TOKEN configured", field="Authorization",
                      headers={"WWW-Authenticate": 'Bearer realm="ldp-telemetry-peer"'})
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), expected.encode()):
        raise Problem(401, "missing or wrong peer token", field="Authorization",
                      headers={"WWW-Authenticate": 'Bearer realm="ldp-telemetry-peer"'})


def _peer_body() -> Any:
    return read_json(int(current_app.config["MAX_BODY_BYTES"]))


@peer.before_request
def _peer_checks() -> None:
    if role() != "helper":
        raise Problem(404, "no such resource")
    _require_peer()
    _charge_peer()


def _charge_peer() -> None:
    "One token of the peer's bucket (``PEER_RATE_LIMIT`` per second, bursts of ``PEER_RATE_BURST``) per request"
    rate = float(current_app.config.get("PEER_RATE_LIMIT", 0))
    if rate <= 0:
        return
    rule = RateRule(rate, max(1.0, float(current_app.config.get("PEER_RATE_BURST", rate))))
    try:
        get_storage().take_token(PEER_BUCKET, rule, time.time())
    except RateLimited as limited:
        raise too_many(limited.retry_after) from None


@peer.put("/v1/peer/campaigns/<name>")
def peer_campaign(name: str) -> tuple[Response, int]:
    "Provision a campaign from the leader (idempotent)"
    campaign, created = helper.provision(get_storage(), dist_store(), name, _peer_body(), utc_today())
    _VDAF_CACHE.clear()
    return jsonify({"name": campaign.name, "version": campaign.version, "fingerprint": campaign.fingerprint}), (
        201 if created else 200)


@peer.put("/v1/peer/aggregation_jobs/<job_id>")
def peer_job(job_id: str) -> Response:
    "Verify and aggregate one job of reports (the same job id again: the stored answer)"
    return jsonify(helper.aggregation_job(get_storage(), dist_store(), job_id, _peer_body(), overlap_days()))


@peer.post("/v1/peer/aggregate_shares")
def peer_aggregate_share() -> Response:
    "The helper's noisy aggregate share of a batch (once, and only once the batch has closed on this helper's clock)"
    return jsonify(helper.aggregate_share(get_storage(), dist_store(), _peer_body(), now=clock_now(),
                                          grace=float(current_app.config["COLLECT_GRACE"])))


# -- leader -------------------------------------------------------------------------------------------------------
def _campaign(name: str, version: int | None = None) -> CampaignVersion:
    if not NAME_PATTERN.fullmatch(name):
        raise Problem(404, f"no campaign {name!r}", field="name")
    try:
        campaign = get_storage().get_campaign(name, version)
    except CampaignNotFound as exc:
        raise Problem(404, str(exc), field="version" if version else "name") from None
    if campaign.spec.prio3 is None:  # any kind's distributed campaign carries its Prio3 circuit
        raise Problem(409, f"campaign {name!r} is not distributed", slug=ProtocolError.NOT_DISTRIBUTED, field="name")
    return campaign


@leader_api.post("/v1/campaigns/<name>/collect")
@require("admin")
def collect(name: str) -> Response:
    """Collect one batch (a UTC day, or a shorter batch's start: the spec's ``window``) of a version: both aggregate
    shares, each with its aggregator's noise, unsharded"""
    body = read_json(4096)
    if not isinstance(body, dict) or set(body) - {"batch", "version"}:
        raise invalid("body", 'must be {"batch": "YYYY-MM-DD"} (and optionally "version", default the latest)')
    try:
        batch = check_batch(body.get("batch"), "batch")
    except ShareRejected as exc:
        raise invalid("batch", exc.message) from None
    version = body.get("version")
    if version is not None and (type(version) is not int or not 1 <= version <= 2**31):
        raise invalid("version", "must be a positive integer")
    campaign = _campaign(name, version)
    try:
        return jsonify(leader.collect(get_storage(), dist_store(), peer_client(), campaign, batch,
                                      grace=float(current_app.config["COLLECT_GRACE"]),
                                      lease_seconds=float(current_app.config["JOB_LEASE"])))
    except leader.CollectError as exc:
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else None
        extra: dict[str, Any] = {"release": exc.release} if exc.release is not None else {}
        extra.update(exc.extra)
        raise Problem(collect_status(exc), exc.detail, slug=exc.slug, field=exc.field, headers=headers,
                      **extra) from None


@leader_api.get("/v1/campaigns/<name>/progress")
@require("admin")
def progress(name: str) -> Response:
    "Where each batch of a version stands: accepted, rejected by reason, pending, aggregated, distance to min_batch"
    version = request.args.get("version")
    if version is not None and not (version.isdigit() and 1 <= int(version) <= 2**31):
        raise invalid("version", "must be a positive integer")
    campaign = _campaign(name, int(version) if version is not None else None)
    return jsonify(leader.campaign_progress(dist_store(), campaign, now=clock_now(),
                                            grace=float(current_app.config["COLLECT_GRACE"])))


@leader_api.get("/v1/campaigns/<name>/releases")
@require("admin")
def releases(name: str) -> Response:
    "Every release of the campaign, by batch"
    campaign = _campaign(name)
    return jsonify({"campaign": campaign.name, "releases": dist_store().releases(campaign.name)})
