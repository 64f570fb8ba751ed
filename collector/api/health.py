"""Liveness, readiness and Prometheus metrics; no key needed (they reveal no report data)."""

from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify

from ..db import get_storage
from ..problems import Problem
from ..storage import DiskFull, StorageUnavailable, storage_fault

blueprint = Blueprint("health", __name__)


@blueprint.get("/livez")
def livez() -> Response:
    "The process is up"
    return jsonify({"status": "ok"})


@blueprint.get("/readyz")
def readyz() -> Response:
    """The database can be read, its write lock taken (not held by a stuck process) and the disk has room.

    Always 503 when not ready (also for a full disk: readiness is yes or no), with Retry-After."""
    lock_timeout = min(1.0, int(current_app.config["BUSY_TIMEOUT_MS"]) / 1000)
    try:
        state = get_storage().check(lock_timeout=lock_timeout)
    except Exception as exc:  # noqa: BLE001 (any database failure means not ready)
        fault = storage_fault(exc) or StorageUnavailable(f"database unavailable ({type(exc).__name__})")
        raise Problem(503, fault.detail, field="database", headers={"Retry-After": str(fault.retry_after)},
                      retry_after=fault.retry_after) from None
    minimum = int(current_app.config["MIN_FREE_DISK_BYTES"])
    if state["free_bytes"] is not None and state["free_bytes"] < minimum:  # None: a server database's disk
        raise Problem(503, f"free disk space below {minimum} bytes", field="disk",
                      headers={"Retry-After": str(DiskFull.retry_after)}, retry_after=DiskFull.retry_after)
    return jsonify({"status": "ok", "database": "ok", "free_bytes": state["free_bytes"]})


@blueprint.get("/metrics")
def metrics() -> Response:
    "Prometheus text exposition of every worker's counters (and on a leader, its distributed campaigns' progress)"
    text = current_app.extensions["ldp_metrics"].exposition()
    if current_app.config.get("ROLE") == "leader":
        # imported here: only a leader loads the distributed modules (+166 ms, 189 modules per standalone worker)
        from ..auth import clock_now
        from ..distributed.metrics import progress_exposition
        from ..distributed.store import DistStore

        storage = get_storage()
        text += progress_exposition(storage, DistStore(storage), now=clock_now(),
                                    grace=float(current_app.config["COLLECT_GRACE"]))
    return Response(text, mimetype="text/plain", content_type="text/plain; version=0.0.4; charset=utf-8")
