"""Running the collector under gunicorn from ``ldp-telemetry serve``.

Workers: :class:`CollectorWorker`, gunicorn's threaded (gthread) worker with bounds on slow clients.  A connection
that has sent nothing is handed back to the worker's poller after ``IDLE_WAIT`` seconds instead of holding a
thread, and every socket read or write of a request times out after ``SOCKET_TIMEOUT`` seconds, so idle or
half-open connections (a header never finished) cannot starve the workers.  A client that drips one byte every
few seconds is not bounded by this: put a buffering proxy in front on a public network.  A thread that answered a
kept-alive connection waits ``NEXT_REQUEST_WAIT`` for its next request (when no other connection is waiting for
a thread), so a device's requests in a row skip the poller.  Each thread keeps its own SQLite connection
(``collector.db``).

Process lifetime: workers die with the master (``PR_SET_PDEATHSIG`` on Linux, set in ``post_fork``), so a
SIGKILLed master leaves no orphan holding the port; clean-up (the metrics directory) runs in the master only.

Privacy of the logs: the access log is off, and the error log goes through :class:`PrivateLogger`, which
removes IP addresses (gunicorn writes the peer address into some warnings, e.g. for malformed requests).  The
application itself never reads ``REMOTE_ADDR`` or ``User-Agent``.

Shutdown: SIGTERM/SIGINT stop gunicorn gracefully (requests in flight finish).  A crash or SIGKILL loses nothing
that was acknowledged: every 200 is sent after the SQLite commit with ``synchronous=FULL``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import logging
import os
import re
import select
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

from gunicorn import util as gunicorn_util
from gunicorn.app.base import BaseApplication
from gunicorn.glogging import Logger
from gunicorn.workers import gthread

from .app import create_app
from .metrics import process_directory
from .storage import open_storage

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


IDLE_WAIT = 0.05  # seconds a new connection may hold a thread before it has sent a byte
NEXT_REQUEST_WAIT = 0.005  # seconds a thread waits for the next request on the connection it just answered
SOCKET_TIMEOUT = 10.0  # seconds any one read or write of a request may block
THREADS = 8  # threads per worker
KEEPALIVE = 5  # seconds an idle kept-alive connection stays open
PR_SET_PDEATHSIG = 1


_format_http_date = gunicorn_util.http_date
_date: tuple[int, str] = (-1, "")


def http_date(timestamp: float | None = None) -> str:
    """``gunicorn.util.http_date``, the Date header of every response, formatted once per second instead of once
    per request (an HTTP date has a resolution of one second)"""
    global _date
    if timestamp is not None:
        return _format_http_date(timestamp)
    second = int(time.time())
    cached = _date
    if cached[0] != second:
        cached = _date = (second, _format_http_date(second))
    return cached[1]


class _TimedConn(gthread.TConn):
    "A gthread connection whose blocking socket operations time out"

    def init(self) -> None:
        super().init()
        self.sock.settimeout(SOCKET_TIMEOUT)  # after gthread's setblocking(True), for every request on it


class CollectorWorker(gthread.ThreadWorker):
    """gthread worker that does not let slow clients hold its threads.

    gthread lets a new connection hold a thread for up to 5 s waiting for its first byte: 50 idle connections
    then occupy every thread.  Here the wait is ``IDLE_WAIT``, after which the connection waits in the poller.
    A kept-alive connection whose next request follows within ``NEXT_REQUEST_WAIT`` is answered on the same
    thread, unless another connection is waiting for one."""

    def init_process(self) -> None:
        gunicorn_util.http_date = http_date  # in this worker process only (gunicorn.http.wsgi calls util.http_date)
        super().init_process()

    def accept(self, listener: Any) -> None:
        try:
            client_sock, client_addr = listener.accept()
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                return
            raise
        self.nr_conns += 1
        client_sock.setblocking(True)
        self.enqueue_req(_TimedConn(self.cfg, client_sock, client_addr, listener.getsockname()))

    def handle(self, conn: Any) -> Any:
        if not conn.initialized and not conn.data_ready and not conn.wait_for_data(IDLE_WAIT):
            return gthread._DEFER
        keep = super().handle(conn)
        while keep and self.alive and self._next_request_soon(conn):
            keep = super().handle(conn)  # the client's next request, on the thread that answered the last one
        return keep

    def _next_request_soon(self, conn: Any) -> bool:
        """Whether the kept-alive connection's next request arrives within ``NEXT_REQUEST_WAIT``, while no other
        connection waits for a thread.  Answering it here saves the poller's round trip (register, a wake-up
        through the main thread, unregister, a hand-off to the pool): a device sends its spec request and its
        reports one after the other on one connection."""
        if not self.tpool._work_queue.empty():  # another connection is waiting: this one goes back to the poller
            return False
        if conn.parser.unreader.buf.getvalue():  # already read ahead
            return True
        waiting = select.poll()  # not select(): it fails on descriptors above 1023
        waiting.register(conn.sock, select.POLLIN)
        return bool(waiting.poll(NEXT_REQUEST_WAIT * 1000))


def die_with_master(arbiter: Any, worker: Any) -> None:
    "gunicorn post_fork hook: the kernel SIGKILLs this worker when the master dies, whatever killed the master"
    if not sys.platform.startswith("linux"):
        return  # elsewhere gunicorn's own parent check (about once a second) stops orphans
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        arbiter.log.warning("prctl(PR_SET_PDEATHSIG) failed: errno %d", ctypes.get_errno())
    if os.getppid() != worker.ppid:  # the master died before prctl took effect
        os._exit(1)


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
          threads: int = THREADS, config: dict | None = None, timeout: int = 30) -> None:
    """Create the schema, then run gunicorn until it is stopped.

    Metrics: an empty directory for prometheus_client's multiprocess mode (``<tmp>/ldp-metrics-<uid>-serve-<pid>``),
    exported as ``PROMETHEUS_MULTIPROC_DIR`` to the workers and removed when the master stops, or at the next start
    if the master was killed; an operator's own ``PROMETHEUS_MULTIPROC_DIR`` is used as it is and kept."""
    with open_storage(database) as storage:
        storage.migrate()
    master = os.getpid()
    own_dir = not os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if own_dir:
        metrics_dir = str(process_directory("serve", master))
        for stale in Path(metrics_dir).iterdir():  # a reused pid: start from zero
            stale.unlink()
    else:
        metrics_dir = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    app_config = {**(config or {}), "DATABASE": database, "METRICS_DIR": metrics_dir}
    options = {
        "bind": f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
        "workers": workers or (os.cpu_count() or 1),
        "worker_class": CollectorWorker,
        "threads": threads,
        "keepalive": KEEPALIVE,
        "post_fork": die_with_master,
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
        # A worker is forked inside run() and leaves it by SystemExit through this block: only the master cleans up.
        if os.getpid() == master and own_dir:
            shutil.rmtree(metrics_dir, ignore_errors=True)
            os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
