"""The collector's Flask application factory; its configuration is ``collector.config``'s (``load_config``)."""

from __future__ import annotations

# Loaded before any request thread runs: werkzeug encodes the Host with the "idna" codec on every request, and a
# codec found lazily by several threads at once can fail with "LookupError: unknown encoding: idna" (a 500 on a
# worker's first concurrent requests, seen with the demo's leader).
import encodings.idna  # noqa: F401
import logging
import sqlite3
import time
from collections.abc import Callable, Mapping
from typing import Any

from flask import Flask, Response, request

from . import cors, db
from .api import budget, campaigns, health, reports, shuffled
from .config import load_config
from .metrics import Metrics, default_directory
from .openapi import blueprint as openapi_blueprint
from .problems import Problem, problem_response, register_error_handlers
from .storage import StorageUnavailable, open_storage, storage_fault

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

    app.register_blueprint(campaigns.blueprint)
    app.register_blueprint(reports.blueprint)
    app.register_blueprint(budget.blueprint)  # the release ledger's routes (and its tables' migrations)
    app.register_blueprint(shuffled.blueprint)
    app.register_blueprint(health.blueprint)
    app.register_blueprint(openapi_blueprint)
    if settings["ROLE"] != "standalone":
        register_distributed(app, settings)
    if int(settings["DASHBOARD"]) and settings["ROLE"] in ("standalone", "leader"):
        # imported here: a deployment that turns the dashboard off (or a helper) never loads it or the reports
        from .dashboard import api_blueprint, pages_blueprint

        app.register_blueprint(pages_blueprint)
        app.register_blueprint(api_blueprint)

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
    # imported here: only a leader or helper loads the distributed modules (+166 ms, 189 modules; scipy below)
    from .distributed import ROLES
    from .distributed import api as distributed
    from .distributed.store import DistStore

    if settings["ROLE"] not in ROLES:
        raise ValueError(f"ROLE must be one of {list(ROLES)}, got {settings['ROLE']!r}")
    if settings["ROLE"] == "leader" and settings["HELPER_URL"]:
        # imported here: only a leader with a helper checks its URL
        from .distributed.peer import checked_helper_url

        checked_helper_url(str(settings["HELPER_URL"]))  # https, or http to loopback only
    with open_storage(settings["DATABASE"]) as storage:
        DistStore(storage).migrate()
    # Collections calibrate their noise with estimators.distributed, whose scipy imports cost about a second of
    # CPU: paid here, as the worker starts, not inside the first collection (on the helper, while the leader
    # waits for its answer), and in this thread, before any request thread could import it concurrently.
    import estimators.distributed  # noqa: F401
    app.register_blueprint(distributed.public)
    # imported here, as the distributed API above: the poplar1 walk's routes, on an aggregator only
    from .kinds.poplar1 import api as poplar1_http

    if settings["ROLE"] == "helper":
        app.register_blueprint(distributed.peer)
        app.register_blueprint(poplar1_http.peer)
        return
    poplar1_http.Chunking.from_config(settings)  # its settings checked as the leader starts
    app.register_blueprint(distributed.leader_api)
    app.register_blueprint(poplar1_http.leader_api)
    if float(settings["AGGREGATE_INTERVAL"]) > 0 and settings["HELPER_URL"]:
        # imported here: only a leader with an aggregation interval runs the driver
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
