"""The collector's Flask application factory.

Configuration, lowest precedence first: :data:`DEFAULTS`, ``LDP_``-prefixed environment variables
(``LDP_DATABASE``, ``LDP_RATE_LIMIT``, ...) and the ``config`` argument.  Keys are upper case; values from the
environment are converted to the type of the default (a tuple from comma-separated text).
"""

from __future__ import annotations

# Loaded before any request thread runs: werkzeug encodes the Host with the "idna" codec on every request, and a
# codec found lazily by several threads at once can fail with "LookupError: unknown encoding: idna" (a 500 on a
# worker's first concurrent requests, seen with the demo's leader).
import encodings.idna  # noqa: F401
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Mapping
from typing import Any

from flask import Flask, Response, request

from . import cors, db
from .metrics import Metrics, default_directory
from .problems import Problem, problem_response, register_error_handlers
from .storage import StorageUnavailable, storage_fault

DEFAULTS: dict[str, Any] = {
    "DATABASE": "",  # path of the SQLite file or a postgresql:// URL (LDP_DATABASE_URL) (required)
    "MAX_BODY_BYTES": 8 * 1024 * 1024,  # request body limit, after gzip decompression
    "MAX_BATCH_REPORTS": 5000,  # reports per POST /v1/reports
    "RATE_LIMIT": 200.0,  # requests per second per key; 0 turns rate limiting off
    "RATE_BURST": 400.0,  # bucket size
    # public keys (embedded in web pages, shared by all their visitors and by anyone who copies them): stricter
    "PUBLIC_RATE_LIMIT": 20.0,  # requests per second per public key; 0 turns it off
    "PUBLIC_RATE_BURST": 100.0,
    "PUBLIC_MAX_BATCH_REPORTS": 100,  # reports per POST /v1/reports of a public key
    "BUSY_TIMEOUT_MS": 10_000,  # how long a writer waits for the SQLite write lock
    "MIN_FREE_DISK_BYTES": 64 * 1024 * 1024,  # /readyz fails below this
    "METRICS_DIR": "",  # prometheus multiprocess directory; empty: PROMETHEUS_MULTIPROC_DIR or a default
    "MAX_ESTIMATE_DAYS": 366,  # per-day estimates answer at most this many days
    "ROLE": "standalone",  # distributed campaigns: "leader" or "helper" (collector.distributed)
    "PEER_RATE_LIMIT": 50.0,  # helper: requests per second from the leader (peer token); 0 turns it off
    "PEER_RATE_BURST": 200.0,
    "HELPER_URL": "",  # the leader's helper: https://..., or http:// to a loopback host only
    "PEER_TOKEN": "",  # aggregator-to-aggregator bearer token, the same on both sides (LDP_PEER_TOKEN)
    "PEER_TIMEOUT": 30.0,  # seconds the leader waits for one answer of the helper
    "AGGREGATE_INTERVAL": 0.0,  # leader: seconds between rounds of the aggregation driver (0: no driver thread)
    "JOB_LEASE": 60.0,  # leader: seconds a claimed aggregation job stays with its driver (collector.distributed.leader)
    "COLLECT_GRACE": 3600.0,  # leader: seconds after a batch's day has ended before it may be collected
    "HPKE_OVERLAP_DAYS": 7,  # leader and helper: days an older HPKE key still opens reports after a rotation
    "HPKE_REFRESH_INTERVAL": 300.0,  # leader: seconds between reads of the helper's HPKE configs by the driver
    "CORS_ORIGINS": (),  # web origins allowed to call the spec and report routes (LDP_CORS_ORIGINS: comma-separated)
}
ENV_PREFIX = "LDP_"


def load_config(config: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> dict:
    "Defaults, overridden by LDP_* environment variables, overridden by ``config``"
    environ = os.environ if environ is None else environ
    out = dict(DEFAULTS)
    for key, default in DEFAULTS.items():
        raw = environ.get(ENV_PREFIX + key)
        if raw is None:
            continue
        try:
            out[key] = raw if isinstance(default, str) else raw.split(",") if isinstance(default, tuple) \
                else type(default)(raw)
        except ValueError:
            raise ValueError(f"{ENV_PREFIX}{key} must be a {type(default).__name__}, got {raw!r}") from None
    for key, value in (config or {}).items():
        out[key.upper()] = value
    if not out["DATABASE"]:
        out["DATABASE"] = environ.get("LDP_DATABASE_URL", "")
    if not out["DATABASE"]:
        raise ValueError("DATABASE (LDP_DATABASE or LDP_DATABASE_URL) must name the SQLite file or a postgresql:// URL")
    return out


STARTED = "ldp.started"  # the WSGI environ key holding the request's perf_counter start


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    "A collector app over the database named by ``config['DATABASE']`` or ``LDP_DATABASE``"
    app = Flask("collector")
    settings = load_config(config)
    settings["CORS_ORIGINS"] = cors.parse_origins(settings["CORS_ORIGINS"])
    app.config.update(settings)
    app.config["MAX_CONTENT_LENGTH"] = int(settings["MAX_BODY_BYTES"])
    app.json.sort_keys = False  # type: ignore[attr-defined]
    metrics = app.extensions["ldp_metrics"] = Metrics(settings["METRICS_DIR"] or default_directory())

    db.init_app(app)
    register_error_handlers(app)
    register_fault_handlers(app)
    cors.install(app, settings["CORS_ORIGINS"])

    from .api import campaigns, health, reports
    from .openapi import blueprint as openapi_blueprint

    app.register_blueprint(campaigns.blueprint)
    app.register_blueprint(reports.blueprint)
    app.register_blueprint(health.blueprint)
    app.register_blueprint(openapi_blueprint)
    if settings["ROLE"] != "standalone":
        register_distributed(app, settings)

    # The latency clock starts as the WSGI call enters the app (a wrapper, not a before_request hook: one hook
    # call and one ``g`` write fewer per request)
    flask_wsgi_app = app.wsgi_app

    def timed_wsgi_app(environ: dict, start_response: Callable) -> Any:
        environ[STARTED] = time.perf_counter()
        return flask_wsgi_app(environ, start_response)

    app.wsgi_app = timed_wsgi_app  # type: ignore[method-assign]
    labels: dict[str | None, str] = {}  # endpoint name -> metrics label

    @app.after_request
    def _observe(response: Response) -> Response:
        environ = request.environ
        started = environ.get(STARTED)
        if started is not None:
            name = request.endpoint  # None without a matched rule; else "<blueprint>.<view>"
            endpoint = labels.get(name)
            if endpoint is None:
                endpoint = labels[name] = "other" if name is None else "estimate" if name == "campaigns.estimate" \
                    else name.rpartition(".")[0] or "other"
            metrics.observe_request(endpoint, response.status_code, time.perf_counter() - started)
        response.headers.setdefault("Cache-Control", "no-store")
        return response

    return app


def register_distributed(app: Flask, settings: Mapping[str, Any]) -> None:
    "The leader's or helper's blueprints, its distributed tables and (leader) the aggregation driver"
    from .distributed import ROLES
    from .distributed import api as distributed
    from .distributed.store import DistStore
    from .storage import open_storage

    if settings["ROLE"] not in ROLES:
        raise ValueError(f"ROLE must be one of {list(ROLES)}, got {settings['ROLE']!r}")
    if settings["ROLE"] == "leader" and settings["HELPER_URL"]:
        from .distributed.peer import checked_helper_url

        checked_helper_url(str(settings["HELPER_URL"]))  # https, or http to loopback only
    with open_storage(settings["DATABASE"]) as storage:
        DistStore(storage).migrate()
    # Collections calibrate their noise with estimators.distributed, whose scipy imports cost about a second of
    # CPU: paid here, as the worker starts, not inside the first collection (on the helper, while the leader
    # waits for its answer), and in this thread, before any request thread could import it concurrently.
    import estimators.distributed  # noqa: F401
    app.register_blueprint(distributed.public)
    if settings["ROLE"] == "helper":
        app.register_blueprint(distributed.peer)
        return
    app.register_blueprint(distributed.leader_api)
    if float(settings["AGGREGATE_INTERVAL"]) > 0 and settings["HELPER_URL"]:
        from .distributed.leader import Driver

        driver = Driver(str(settings["DATABASE"]), str(settings["HELPER_URL"]), str(settings["PEER_TOKEN"]),
                        float(settings["AGGREGATE_INTERVAL"]), lease_seconds=float(settings["JOB_LEASE"]),
                        refresh_interval=float(settings["HPKE_REFRESH_INTERVAL"]))
        app.extensions["ldp_aggregation_driver"] = driver
        driver.start()


def fault_problem(fault: StorageUnavailable) -> Problem:
    "503 (locked, corrupt, unavailable) or 507 (disk full) with Retry-After; the request wrote nothing"
    slug, title = ("insufficient-storage", "Insufficient storage") if fault.status == 507 else ("unavailable", None)
    return Problem(fault.status, f"{fault.detail}; nothing was stored, retry later", field="database", slug=slug,
                   title=title, headers={"Retry-After": str(fault.retry_after)}, retry_after=fault.retry_after)


def register_fault_handlers(app: Flask) -> None:
    "Storage faults answer 503/507 problem+json instead of 500"

    @app.errorhandler(StorageUnavailable)
    def _unavailable(fault: StorageUnavailable) -> Response:
        logging.getLogger("collector").warning("storage fault: %s", fault.detail)
        return problem_response(fault_problem(fault))

    @app.errorhandler(sqlite3.DatabaseError)  # a read outside a transaction (writes raise StorageUnavailable)
    def _database(error: sqlite3.DatabaseError) -> Response:
        fault = storage_fault(error)
        if fault is None:
            logging.getLogger("collector").exception("unhandled %s", type(error).__name__)
            return problem_response(Problem(500, "the collector failed to process the request"))
        return _unavailable(fault)
