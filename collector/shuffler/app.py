"""The shuffler's Flask application (``ldp-telemetry serve --role shuffler --upstream URL``).

Devices use it exactly as a collector: ``GET /v1/campaigns`` and ``GET /v1/campaigns/<name>`` (passed through to
the upstream collector with the shuffler's key, so the collector does not see the devices' spec requests either)
and ``POST /v1/reports`` with the same body and answer.  Devices authenticate with keys of the shuffler's own
database (``ldp-telemetry keys create --db <shuffler database> --role ingest``).  A report is accepted once it is
committed to the queue (``queue.ShuffleQueue``); only reports of a campaign version whose trust is ``shuffled``
are taken, each payload checked by the campaign's server mechanism.  The forwarding loop is ``forwarder``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

from flask import Blueprint, Flask, Response, current_app, g, jsonify, request

from client_sdk.errors import PayloadError
from client_sdk.kinds.shuffle_params import shuffle_rule
from client_sdk.spec import NAME_PATTERN

from .. import cors, db
from ..api.body import count_items, parse_json, read_body
from ..api.reports import FINGERPRINT, ITEMS_PER_REPORT, REPORT_FIELDS, UUID4
from ..auth import max_batch_reports, rate_rule, require, too_many
from ..config import load_config
from ..metrics import Metrics, default_directory
from ..problems import Problem, invalid, register_error_handlers
from ..storage import RateLimited
from .forwarder import Forwarder
from .queue import QueuedReport, ShuffleQueue
from .upstream import Upstream, UpstreamError

blueprint = Blueprint("shuffler", __name__)
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")


def create_shuffler_app(config: Mapping[str, Any] | None = None) -> Flask:
    "A shuffler over ``config['DATABASE']`` forwarding to ``config['UPSTREAM_URL']`` with ``UPSTREAM_TOKEN``"
    app = Flask("shuffler")
    settings = load_config(config)
    if not settings["UPSTREAM_URL"] or not settings["UPSTREAM_TOKEN"]:
        raise ValueError("a shuffler needs UPSTREAM_URL and UPSTREAM_TOKEN (the collector and a key of role "
                         "shuffler there)")
    settings["CORS_ORIGINS"] = cors.parse_origins(settings["CORS_ORIGINS"])
    app.config.update(settings)
    app.config["MAX_CONTENT_LENGTH"] = int(settings["MAX_BODY_BYTES"])
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.extensions["ldp_metrics"] = Metrics(settings["METRICS_DIR"] or default_directory())
    db.init_app(app)
    register_error_handlers(app)
    cors.install(app, settings["CORS_ORIGINS"])
    upstream = app.extensions["ldp_upstream"] = Upstream(str(settings["UPSTREAM_URL"]),
                                                         str(settings["UPSTREAM_TOKEN"]))
    app.register_blueprint(blueprint)
    if float(settings["FORWARD_INTERVAL"]) > 0:
        forwarder = Forwarder(str(settings["DATABASE"]), upstream, interval=float(settings["FORWARD_INTERVAL"]))
        app.extensions["ldp_shuffle_forwarder"] = forwarder
        forwarder.start()
    return app


def _upstream() -> Upstream:
    upstream: Upstream = current_app.extensions["ldp_upstream"]
    return upstream


def _passed_through(path: str, params: dict | None = None) -> Response:
    try:
        answer = _upstream().get(path, params)
    except UpstreamError as exc:
        raise Problem(503, f"{exc}; retry later", field="upstream", headers={"Retry-After": "5"}) from None
    return current_app.response_class(answer.content, status=answer.status_code,
                                      mimetype=answer.headers.get("Content-Type", "application/json"))


@blueprint.get("/livez")
def livez() -> Response:
    return jsonify({"status": "ok", "role": "shuffler"})


@blueprint.get("/readyz")
def readyz() -> Response:
    "Ready once its queue's database answers"
    ShuffleQueue(db.get_storage()).count()
    return jsonify({"status": "ok", "role": "shuffler"})


@blueprint.get("/v1/campaigns")
@require("ingest", "admin")
def list_campaigns() -> Response:
    "The collector's listing, as the shuffler's key sees it"
    return _passed_through("/v1/campaigns")


@blueprint.get("/v1/campaigns/<name>")
@require("ingest", "admin")
def get_campaign(name: str) -> Response:
    "One campaign's spec from the collector"
    if not _SAFE_NAME.fullmatch(name):
        raise Problem(404, f"no campaign {name[:100]!r}", field="name")
    version = request.args.get("version")
    return _passed_through(f"/v1/campaigns/{name}", {"version": version} if version else None)


@blueprint.post("/v1/reports")
@require("ingest", "admin", take_token=False)
def ingest() -> Response:
    "Queue a batch of reports of shuffled campaigns (acknowledged once committed)"
    limit = max_batch_reports(g.api_key)
    raw = read_body(int(current_app.config["MAX_BODY_BYTES"]))
    if count_items(raw) > ITEMS_PER_REPORT * (limit + 1):
        raise Problem(413, f"body holds too many JSON items for at most {limit} reports", field="body",
                      max_reports=limit)
    body = parse_json(raw)
    if not isinstance(body, dict) or set(body) != {"reports"}:
        raise invalid("body", 'must be a JSON object {"reports": [...]}')
    reports = body["reports"]
    if not isinstance(reports, list) or not reports:
        raise invalid("reports", "must be a non-empty list of reports")
    if len(reports) > limit:
        raise Problem(413, f"batch of {len(reports)} reports exceeds the limit of {limit}", field="reports",
                      max_reports=limit)
    queued, errors = _checked(reports)
    accepted = duplicate = 0
    if queued:
        try:
            accepted, duplicate = ShuffleQueue(db.get_storage()).enqueue(
                queued, time.time(), key_hash=g.api_key.key_hash, rate=rate_rule(g.api_key))
        except RateLimited as limited:
            raise too_many(limited.retry_after) from None
    return jsonify({"accepted": accepted, "duplicate": duplicate, "rejected": len(errors), "errors": errors})


def _checked(reports: list) -> tuple[list[QueuedReport], list[dict]]:
    "The reports to queue and the rejections (as the collector names them)"
    out: list[QueuedReport] = []
    errors: list[dict] = []
    key = g.api_key
    mechanisms: dict[tuple[str, str], Any] = {}
    for index, report in enumerate(reports):
        if type(report) is not dict or report.keys() != REPORT_FIELDS:
            errors.append(_reject(index, None, "", "must be an object with report_id, campaign, fingerprint, "
                                                   "payload"))
            continue
        report_id, name, fingerprint = report["report_id"], report["campaign"], report["fingerprint"]
        if type(report_id) is not str or not UUID4.fullmatch(report_id):
            errors.append(_reject(index, None, "report_id", "must be a lower-case UUID version 4 string"))
            continue
        if type(name) is not str or not NAME_PATTERN.fullmatch(name) or not key.may_use(name):
            errors.append(_reject(index, report_id, "campaign", "must be a campaign this key may report to"))
            continue
        if type(fingerprint) is not str or not FINGERPRINT.fullmatch(fingerprint):
            errors.append(_reject(index, report_id, "fingerprint", "must be 32 lower-case hex digits"))
            continue
        mechanism = mechanisms.get((name, fingerprint))
        if mechanism is None:
            mechanism = mechanisms[(name, fingerprint)] = _mechanism(name, fingerprint)
        if isinstance(mechanism, str):
            errors.append(_reject(index, report_id, "campaign", mechanism))
            continue
        try:
            mechanism.check_payload(report["payload"])
        except PayloadError as exc:
            errors.append(_reject(index, report_id, exc.field, exc.reason))
            continue
        except Exception:  # noqa: BLE001 (a malformed payload must never become a 500)
            errors.append(_reject(index, report_id, "payload", "has the wrong shape for this campaign"))
            continue
        out.append((report_id, name, fingerprint, report["payload"]))
    return out, errors


def _mechanism(name: str, fingerprint: str) -> Any:
    "The version's server mechanism, or why its reports are refused"
    # numpy: with the first report, not at start-up
    from estimators.mechanisms import mechanism_for

    try:
        spec = _upstream().spec(name, fingerprint)
    except UpstreamError as exc:
        raise Problem(503, f"{exc}; retry later", field="upstream", headers={"Retry-After": "5"}) from None
    if spec is None:
        return "unknown campaign version at the collector"
    if shuffle_rule(spec) is None:
        return "is not shuffled: send its reports to the collector"
    return mechanism_for(spec)


def _reject(index: int, report_id: str | None, field: str, reason: str) -> dict:
    path = f"reports[{index}]" + (f".{field}" if field else "")
    return {"index": index, "report_id": report_id, "field": path, "reason": reason}
