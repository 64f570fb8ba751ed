"""Running the collector under gunicorn (several sync workers) from ``ldp-telemetry serve``.

Privacy of the logs: the access log is off, and the error log goes through :class:`PrivateLogger`, which
removes IP addresses (gunicorn writes the peer address into some warnings, e.g. for malformed requests).  The
application itself never reads ``REMOTE_ADDR`` or ``User-Agent``.

Shutdown: SIGTERM/SIGINT stop gunicorn gracefully (requests in flight finish).  A crash or SIGKILL loses nothing
that was acknowledged: every 200 is sent after the SQLite commit with ``synchronous=FULL``.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.glogging import Logger

from .app import create_app
from .storage import Storage

_IPV4 = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")
_IPV6 = re.compile(r"\b(?:[0-9a-fA-F]{0,4}:){2,7}[0-9a-fA-F]{0,4}\b")
_IP_FIELD = re.compile(r"ip=\S+")


def redact(text: str) -> str:
    "Remove anything that looks like an IP address"
    return _IPV6.sub("[address]", _IPV4.sub("[address]", _IP_FIELD.sub("ip=[address]", text)))


class RedactAddresses(logging.Filter):
    "A logging filter that rewrites each record without IP addresses"

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        record.msg, record.args = redact(message), ()
        return True


class PrivateLogger(Logger):
    "gunicorn's logger without an access log and with addresses removed from the error log"

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for handler in self.error_log.handlers:
            handler.addFilter(RedactAddresses())

    def access(self, resp: Any, req: Any, environ: Any, request_time: Any) -> None:
        return None  # no access log: it would hold addresses, user agents and precise times


class CollectorServer(BaseApplication):
    "gunicorn serving ``create_app(app_config)``"

    def __init__(self, app_config: dict, options: dict) -> None:
        self.app_config = app_config
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)  # type: ignore[union-attr]

    def load(self) -> Any:
        return create_app(self.app_config)


def serve(database: str, *, host: str = "127.0.0.1", port: int = 8000, workers: int | None = None,
          config: dict | None = None, timeout: int = 30) -> None:
    "Create the schema, then run gunicorn until it is stopped"
    with Storage(database) as storage:
        storage.migrate()
    metrics_dir = tempfile.mkdtemp(prefix="ldp-metrics-")
    app_config = {**(config or {}), "DATABASE": database, "METRICS_DIR": metrics_dir}
    options = {
        "bind": f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
        "workers": workers or (os.cpu_count() or 1),
        "worker_class": "sync",
        "accesslog": None,
        "errorlog": "-",
        "loglevel": "info",
        "logger_class": PrivateLogger,
        "timeout": timeout,
        "graceful_timeout": 10,
        "proc_name": "ldp-collector",
        "forwarded_allow_ips": "",
        "control_socket_disable": True,  # several collectors (tests, benchmarks) may run side by side
    }
    try:
        CollectorServer(app_config, options).run()
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)
