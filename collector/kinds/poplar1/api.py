"""HTTP endpoints of a poplar1 walk: the helper's peer routes (``levels`` describes them; the peer token, as the
distributed peer routes), and the leader's ``POST /v1/campaigns/<name>/walk`` (admin key, ``{"batch": DAY}``).
Refusals are problem+json naming the field: a level refused by an aggregator's rules is 409 with its rule's
name as the problem type (``rules.LevelRefusal``)."""

from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify

from client_sdk.distributed_messages import ProtocolError, check_batch
from client_sdk.errors import ShareRejected
from estimators.kinds.poplar1 import POPLAR1_ESTIMATES
from estimators.window import finite_json

from ...api.args import confidence_arg
from ...api.body import read_json
from ...auth import require, utc_today
from ...db import get_storage
from ...distributed import api as dist_api
from ...distributed.helper import PeerProblem
from ...distributed.peer import PeerRefused, PeerUnavailable
from ...problems import Problem, invalid, problem_response
from ...storage import CampaignNotFound, CampaignVersion, StorageBase
from . import helper, leader
from .levels import Chunking
from .rules import LevelRefusal, LevelRefused
from .store import Poplar1Store

peer = Blueprint("poplar1_peer", __name__)
leader_api = Blueprint("poplar1_leader", __name__)
REFUSAL_FIELD = {LevelRefusal.LEVEL_NOT_IN_WALK: "level", LevelRefusal.LEVEL_NOT_INCREASING: "level",
                 LevelRefusal.PREFIXES_INVALID: "prefixes", LevelRefusal.REPORT_REPEATED: "reports",
                 LevelRefusal.BATCH_TOO_SMALL: "reports", LevelRefusal.CHUNK_MISMATCH: "chunk",
                 LevelRefusal.LEVEL_INCOMPLETE: "chunk"}


def poplar1_store() -> Poplar1Store:
    return Poplar1Store(get_storage())


def _body() -> object:
    return read_json(int(current_app.config["MAX_BODY_BYTES"]))


@peer.before_request
def _checks() -> None:
    dist_api._peer_checks()


@peer.errorhandler(PeerProblem)
def _peer_problem(exc: PeerProblem) -> Response:
    return problem_response(Problem(dist_api.PEER_STATUS.get(exc.slug, 400), exc.detail, slug=exc.slug,
                                    field=exc.field))


@peer.errorhandler(LevelRefused)
@leader_api.errorhandler(LevelRefused)
def _refused(exc: LevelRefused) -> Response:
    return problem_response(Problem(409, exc.detail, slug=str(exc.reason), field=REFUSAL_FIELD[exc.reason]))


@peer.put("/v1/peer/poplar1/campaigns/<name>")
def peer_campaign(name: str) -> tuple[Response, int]:
    campaign, created = helper.provision(get_storage(), poplar1_store(), name, _body(), utc_today())
    return jsonify({"name": campaign.name, "version": campaign.version, "fingerprint": campaign.fingerprint}), (
        201 if created else 200)


@peer.post("/v1/peer/poplar1/levels")
def peer_level() -> Response:
    return jsonify(helper.level_init(get_storage(), poplar1_store(), _body(), utc_today(), dist_api.overlap_days()))


@peer.post("/v1/peer/poplar1/levels/sketch")
def peer_sketch() -> Response:
    return jsonify(helper.level_sketch(get_storage(), poplar1_store(), _body(), utc_today(),
                                       dist_api.overlap_days()))


@peer.post("/v1/peer/poplar1/levels/aggregate")
def peer_aggregate() -> Response:
    return jsonify(helper.level_aggregate(get_storage(), poplar1_store(), _body(), utc_today(),
                                          dist_api.overlap_days()))


@peer.post("/v1/peer/poplar1/levels/finish")
def peer_finish() -> Response:
    return jsonify(helper.level_finish(get_storage(), poplar1_store(), _body(), utc_today(),
                                       dist_api.overlap_days()))


@leader_api.post("/v1/campaigns/<name>/walk")
@require("admin")
def walk(name: str) -> Response:
    "Walk one batch of the campaign's latest version with the helper; its release (stored, then repeated)"
    body = read_json(4096)
    if not isinstance(body, dict) or set(body) - {"batch"}:
        raise invalid("body", 'must be {"batch": "YYYY-MM-DD"}')
    try:
        batch = check_batch(body.get("batch"), "batch")
    except ShareRejected as exc:
        raise invalid("batch", exc.message) from None
    try:
        campaign = get_storage().get_campaign(name)
    except CampaignNotFound as exc:
        raise Problem(404, str(exc), field="name") from None
    if campaign.spec.kind != "poplar1":
        raise Problem(409, f"campaign {name!r} is not a poplar1 campaign", slug=ProtocolError.NOT_DISTRIBUTED,
                      field="name")
    try:
        return jsonify(leader.collect(get_storage(), poplar1_store(), dist_api.peer_client(), campaign, batch,
                                      Chunking.from_config(current_app.config)))
    except PeerUnavailable as exc:
        raise Problem(503, f"the helper is unavailable ({exc})", slug=ProtocolError.HELPER_UNAVAILABLE,
                      field="HELPER_URL") from None
    except PeerRefused as exc:
        raise Problem(409 if exc.status == 409 else 502, f"the helper refused: {exc.detail}", slug=exc.slug,
                      field="helper") from None


@leader_api.get("/v1/campaigns/<name>/walks")
@require("admin")
def walks(name: str) -> Response:
    "Every stored walk release of the campaign, by batch"
    return jsonify({"campaign": name, "releases": poplar1_store().releases(name)})


def create_campaign(storage: StorageBase, body: dict, day: str) -> tuple[CampaignVersion, bool]:
    "POST /v1/campaigns with a poplar1 spec: on the leader, the helper provisioned first"
    if dist_api.role() != "leader":
        raise Problem(409, "a poplar1 campaign is created on its leader (serve --role leader --helper-url ...)",
                      slug=ProtocolError.DISTRIBUTED_NEEDS_LEADER, field="trust")
    try:
        return leader.provision_campaign(storage, poplar1_store(), dist_api.peer_client(),
                                         str(current_app.config.get("HELPER_URL")), body, day)
    except PeerUnavailable as exc:
        raise Problem(503, f"the helper could not be provisioned ({exc}); retry",
                      slug=ProtocolError.HELPER_UNAVAILABLE, field="HELPER_URL") from None
    except PeerRefused as exc:
        raise Problem(502, f"the helper refused the campaign: {exc.detail}", slug=ProtocolError.HELPER_REFUSED,
                      field="HELPER_URL") from None


def estimate_response(campaign: CampaignVersion) -> Response:
    "GET /v1/campaigns/<name>/estimate: the latest walk of the version, estimated at ``confidence``"
    releases = [r for r in poplar1_store().releases(campaign.name) if r.get("fingerprint") == campaign.fingerprint]
    if not releases:
        raise Problem(409, f"campaign {campaign.name!r} has no walk yet: POST /v1/campaigns/{campaign.name}/walk",
                      slug=ProtocolError.NO_RELEASE, field="batch")
    return jsonify(finite_json(POPLAR1_ESTIMATES.estimate_json(campaign.spec, releases[-1], confidence_arg())))
