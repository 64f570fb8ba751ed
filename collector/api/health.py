"""Liveness, readiness and Prometheus metrics; no key needed (they reveal no report data)."""

from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify

from ..db import get_storage
from ..problems import Problem

blueprint = Blueprint("health", __name__)


@blueprint.get("/livez")
def livez() -> Response:
    "The process is up"
    return jsonify({"status": "ok"})


@blueprint.get("/readyz")
def readyz() -> Response:
    "The database answers and the disk has room"
    try:
        state = get_storage().check()
    except Exception as exc:  # noqa: BLE001 (any database failure means not ready)
        raise Problem(503, f"database unavailable ({type(exc).__name__})", field="database") from None
    minimum = int(current_app.config["MIN_FREE_DISK_BYTES"])
    if state["free_bytes"] < minimum:
        raise Problem(503, f"free disk space below {minimum} bytes", field="disk")
    return jsonify({"status": "ok", "database": "ok", "free_bytes": state["free_bytes"]})


@blueprint.get("/metrics")
def metrics() -> Response:
    "Prometheus text exposition of every worker's counters"
    text = current_app.extensions["ldp_metrics"].exposition()
    return Response(text, mimetype="text/plain", content_type="text/plain; version=0.0.4; charset=utf-8")
