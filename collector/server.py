"""Running the collector under gunicorn from ``ldp-telemetry serve``.

Workers: :class:`CollectorWorker`, gunicorn's threaded (gthread) worker whose event loop reads each request (head
and body) before a thread sees it, so slow, stalled or idle clients cannot starve the threads (details in its
docstring).  Each thread keeps its own SQLite connection (``collector.db``).

Process lifetime: workers die with the master (``PR_SET_PDEATHSIG`` on Linux, set in ``post_fork``), so a
SIGKILLed master leaves no orphan holding the port; clean-up (the metrics directory) runs in the master only.

Privacy of the logs: the access log is off, and the error log goes through :class:`PrivateLogger`, which
removes IP addresses (gunicorn writes the peer address into some warnings, e.g. for malformed requests).  The
application itself never reads ``REMOTE_ADDR`` or ``User-Agent``.

Shutdown: SIGTERM/SIGINT stop gunicorn gracefully (requests in flight finish; a leader's aggregation driver gives
its job leases back: ``stop_driver``).  A crash or SIGKILL loses nothing
that was acknowledged: every 200 is sent after the SQLite commit with ``synchronous=FULL``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import json
import logging
import os
import re
import selectors
import shutil
import signal
import socket
import sys
import time
from functools import partial
from http import HTTPStatus
from pathlib import Path
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication
from gunicorn.glogging import Logger
from gunicorn.workers import gthread

from . import cors
from .app import create_app
from .metrics import process_directory
from .problems import PROBLEM_CONTENT_TYPE, Problem
from .request_buffer import RequestBuffer
from .storage import open_storage

_IPV4 = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")
_IPV6 = re.compile(r"\b(?:[0-9a-fA-F]{0,4}:){2,7}[0-9a-fA-F]{0,4}\b")
_IP_FIELD = re.compile(r"ip=\S+")
LISTENING = "Listening at: "  # how gunicorn.arbiter's format for the bound listeners begins (at start and reload)


def redact(text: str) -> str:
    "Remove anything that looks like an IP address"
    return _IPV6.sub("[address]", _IPV4.sub("[address]", _IP_FIELD.sub("ip=[address]", text)))


class RedactAddresses(logging.Filter):
    """A logging filter that rewrites each record without IP addresses, except gunicorn's "Listening at" line: the
    address (and port, when port 0 was asked for) the server itself bound, which the operator needs"""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith(LISTENING):
            return True
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


REQUEST_TIMEOUT = 15.0  # seconds from a request's first byte until all of it (head and body) has arrived
SOCKET_TIMEOUT = 10.0  # seconds a thread's write (an answer to a client that does not read it) or read may block
MAX_HEAD_BYTES = 64 * 1024  # a longer request head is answered 431 without reaching a thread
BUFFER_BUDGET = 64 * 1024 * 1024  # bytes of requests a worker's event loop holds at once; past it new ones get 503
LINGER = 2.0  # seconds a refused connection's further input is read and discarded before it closes
READ_SIZE = 64 * 1024
SWEEP_INTERVAL = 0.25  # seconds between two looks for connections past their deadline
THREADS = 8  # threads per worker
KEEPALIVE = 5  # seconds an idle kept-alive connection stays open
PR_SET_PDEATHSIG = 1


class _TimedSocket(socket.socket):
    "A socket whose blocking mode times out: gthread sets a connection blocking before each of its requests"

    def setblocking(self, flag: bool) -> None:
        if flag:
            self.settimeout(SOCKET_TIMEOUT)
        else:
            super().setblocking(False)


class _BufferedConn(gthread.TConn):
    "A gthread connection with the request the event loop is reading for it"

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.incoming: RequestBuffer | None = None  # None once refused: the loop only discards what still comes
        self.deadline = 0.0  # when the event loop gives up on it
        self.continue_sent = False


# problem types of the answers only the event loop or gunicorn's parser gives (the others are in collector.errors)
_WIRE_SLUGS = {408: "request-timeout", 414: "uri-too-long", 417: "expectation-failed", 431: "head-too-large",
               501: "not-implemented"}
_TOKEN = re.compile(r"[A-Za-z0-9-]{1,64}")


def _error_response(status: int, detail: str, *, field: str | None = None, headers: tuple[str, ...] = ()) -> bytes:
    "A complete HTTP/1.1 problem+json response that closes the connection"
    slug = _WIRE_SLUGS.get(status)
    phrase = HTTPStatus(status).phrase
    body = json.dumps(Problem(status, detail, field=field, slug=slug, title=phrase if slug else None).to_dict())
    head = [f"HTTP/1.1 {status} {phrase}", f"Content-Type: {PROBLEM_CONTENT_TYPE}", f"Content-Length: {len(body)}",
            "Connection: close", *headers, "", ""]
    return "\r\n".join(head).encode() + body.encode()


_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


class _Captured:
    "Stands in for the client's socket in gunicorn's handle_error, to learn the status of the answer it writes"

    def __init__(self) -> None:
        self.sent = b""

    def gettimeout(self) -> float:
        return 0.0  # gunicorn's write_nonblock then sends as it is

    def sendall(self, data: bytes) -> None:
        self.sent += data

    def status(self) -> int:
        match = re.match(rb"HTTP/1\.1 (\d{3}) ", self.sent)
        return int(match.group(1)) if match else 500


# Why a subclass of gthread and not gunicorn's own worker: a user-visible gain.  With stock gthread, 50 clients that
# send half a request head hold all of a worker's threads and every other device waits (/livez is not answered within
# 1 s); with this worker they are answered.  Checked by running, with ``"worker_class": "gthread"`` in serve() and then
# without it:  pytest tests/collector/test_serving.py::test_slow_and_idle_clients_do_not_starve_the_default_server
# It builds on gthread internals of the 27 series (TConn, enqueue_req, finish_request, _cap_keepalive,
# Unreader.take_buffered), hence gunicorn<28 in pyproject.toml.
class CollectorWorker(gthread.ThreadWorker):
    """gthread worker whose threads only ever see whole requests.

    gthread hands a connection to a thread as soon as it has a byte to read, and the thread then blocks until the
    request head (and later the body) arrives: 50 clients that send half a head hold every thread.  Here the
    worker's event loop reads each request with non-blocking reads into a :class:`RequestBuffer` and submits the
    connection to the thread pool only once the head and the body (up to ``MAX_BODY_BYTES``) are all there, so a
    slow, stalled or idle client costs a buffer and a descriptor, not a thread.  A request not complete within
    ``request_timeout`` seconds of its first byte is answered 408, a head above ``MAX_HEAD_BYTES`` 431, both from
    the loop, and so is a body known to exceed the limit (413, from its ``Content-Length`` or a chunk size) and
    malformed framing (400 or 501: :mod:`collector.request_buffer`), with the CORS headers the application would
    give once the head is known; what gunicorn's parser refuses in a whole head is answered problem+json too
    (:meth:`handle_error`).  An idle connection closes after ``KEEPALIVE`` seconds.  Connections per worker are
    bounded by gunicorn's ``worker_connections`` (accepting pauses at the bound), the bytes the loop holds by
    ``BUFFER_BUDGET`` (past it a request still arriving is answered 503 with ``Retry-After``).  The loop's own
    answers close the connection after a linger that discards what the client still sends, so the client reads
    the answer.  ``Expect: 100-continue`` is answered by the loop."""

    max_body = 8 * 1024 * 1024  # the application's MAX_CONTENT_LENGTH, set in run()
    request_timeout = REQUEST_TIMEOUT  # serve(request_timeout=...) runs a subclass with its own

    def init_process(self) -> None:
        self.reading: dict[_BufferedConn, None] = {}  # connections the loop reads (an ordered set)
        self.buffered_bytes = 0  # held in the RequestBuffers of self.reading
        self.next_sweep = 0.0
        super().init_process()

    def run(self) -> None:
        limit = getattr(self.wsgi, "config", {}).get("MAX_CONTENT_LENGTH")
        self.max_body = int(limit) if limit else self.max_body
        super().run()

    # -- the event loop --------------------------------------------------------------------------------------
    def accept(self, listener: Any) -> None:
        try:
            client_sock, client_addr = listener.accept()
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                return
            raise
        self.nr_conns += 1
        sock = _TimedSocket(fileno=client_sock.detach())
        conn = _BufferedConn(self.cfg, sock, client_addr, listener.getsockname())
        self._read_next_request(conn, b"")

    def _read_next_request(self, conn: _BufferedConn, read_ahead: bytes, incoming: RequestBuffer | None = None) -> None:
        "Have the loop read the connection's next request, starting with ``read_ahead`` (or ``incoming``)"
        conn.sock.setblocking(False)
        conn.incoming = incoming or RequestBuffer(max_head=MAX_HEAD_BYTES, max_body=self.max_body)
        conn.continue_sent = False
        if read_ahead:
            conn.incoming.feed(read_ahead)
        self.buffered_bytes += len(conn.incoming.data)
        idle = not conn.incoming.data
        conn.deadline = time.monotonic() + (self.cfg.keepalive if idle else self.request_timeout)
        if not self.alive and idle:
            conn.deadline = min(conn.deadline, time.monotonic() + gthread.STOP_KEEPALIVE_LINGER)
        self.reading[conn] = None
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_readable, conn))
        if read_ahead:
            self._progress(conn)
        else:
            self._on_readable(conn)  # a new connection's request is often there already

    def _on_readable(self, conn: _BufferedConn, _sock: Any = None) -> None:
        incoming = conn.incoming
        was_idle = incoming is not None and not incoming.data
        for _ in range(16):  # up to 1 MiB per wake-up, then the other connections' turn
            try:
                chunk = conn.sock.recv(READ_SIZE)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                return self._close(conn)
            if not chunk:
                return self._close(conn)  # the client closed: nobody to answer
            if incoming is None:
                continue  # refused: what still comes is discarded until the client closes or the linger ends
            incoming.feed(chunk)
            self.buffered_bytes += len(chunk)
            if len(chunk) < READ_SIZE or incoming.ready or incoming.refused:
                break
        if incoming is None:
            return None
        if was_idle and incoming.data:  # the request has begun: it has request_timeout seconds to arrive
            conn.deadline = time.monotonic() + self.request_timeout
        return self._progress(conn)

    def _progress(self, conn: _BufferedConn) -> None:
        "Hand the connection to a thread, answer it from here, or keep reading"
        incoming = conn.incoming
        assert incoming is not None
        if incoming.head_too_large:
            self._refuse(conn, _error_response(431, f"the request head is longer than {MAX_HEAD_BYTES} bytes"))
        elif incoming.malformed is not None:
            malformed = incoming.malformed
            self._refuse(conn, _error_response(malformed.status, malformed.detail, field=malformed.field,
                                               headers=self._cors_headers(incoming)))
        elif incoming.too_large:
            self._refuse(conn, _error_response(413, f"body exceeds the limit of {self.max_body} bytes", field="body",
                                               headers=self._cors_headers(incoming)))
        elif incoming.ready:
            self._stop_reading(conn)
            self.enqueue_req(conn)
        elif self.buffered_bytes > BUFFER_BUDGET:
            self._refuse(conn, _error_response(503, "too many request bodies on their way in at once: retry",
                                               headers=("Retry-After: 1", *self._cors_headers(incoming))))
        elif incoming.expects_continue and not conn.continue_sent:
            conn.continue_sent = True
            self._send(conn, _CONTINUE)

    def _cors_headers(self, incoming: RequestBuffer) -> tuple[str, ...]:
        "The CORS headers the application would give this request's answer (none before its head has arrived)"
        if not isinstance(self.wsgi, Flask) or incoming.method is None or incoming.path is None:
            return ()
        found = cors.headers_for(self.wsgi, incoming.method, incoming.path, incoming.origin)
        return tuple(f"{name}: {value}" for name, value in found.items())

    def _stop_reading(self, conn: _BufferedConn) -> None:
        if self.reading.pop(conn, False) is None and conn.incoming is not None:
            self.buffered_bytes -= len(conn.incoming.data)
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass

    def _refuse(self, conn: _BufferedConn, answer: bytes) -> None:
        """Answer from the loop, then close without losing the answer: stop sending, and discard what the client
        still sends for up to ``LINGER`` seconds (closing a socket with unread input resets the connection, and the
        client could lose the answer while it is still sending its body)"""
        self._stop_reading(conn)
        conn.incoming = None
        self._send(conn, answer)
        try:
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            return self._close(conn)
        conn.deadline = time.monotonic() + LINGER
        self.reading[conn] = None
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_readable, conn))
        return None

    def _close(self, conn: _BufferedConn) -> None:
        self._stop_reading(conn)
        self.nr_conns -= 1
        conn.close()

    @staticmethod
    def _send(conn: _BufferedConn, data: bytes) -> None:
        "Best effort, without blocking: the socket's send buffer is empty between requests"
        try:
            conn.sock.send(data)
        except OSError:
            pass

    def murder_keepalived(self, force: bool = False) -> None:
        "Close the connections past their deadline (all when forced); a request cut short is answered 408"
        super().murder_keepalived(force)
        now = time.monotonic()
        if now < self.next_sweep and not force:
            return
        self.next_sweep = now + SWEEP_INTERVAL
        for conn in [conn for conn in self.reading if force or conn.deadline <= now]:
            if conn.incoming is not None and conn.incoming.data and not force:
                self._refuse(conn, _error_response(408, "the request did not arrive in time",
                                                   headers=self._cors_headers(conn.incoming)))
            else:
                self._close(conn)  # idle, or done lingering

    def _cap_keepalive(self, deadline: float) -> None:
        super()._cap_keepalive(deadline)
        for conn in self.reading:
            if conn.incoming is not None and not conn.incoming.data:
                conn.deadline = min(conn.deadline, deadline)

    def finish_request(self, conn: Any, fs: Any) -> None:
        if fs.cancelled() or fs.exception() is not None or not fs.result():
            return super().finish_request(conn, fs)
        try:
            self._read_next_request(conn, conn.parser.unreader.take_buffered(), conn.incoming)
        except Exception:  # noqa: BLE001 (as gthread: a failure on one connection closes it)
            self._close(conn)

    # -- the threads -----------------------------------------------------------------------------------------
    def handle(self, conn: Any) -> Any:
        conn.data_ready = True  # the whole request is in conn.incoming: no waiting in gthread's handle
        conn.sock.setblocking(True)
        conn.init()
        incoming, conn.incoming = conn.incoming, None
        if incoming is not None:
            conn.parser.unreader.unread(bytes(incoming.data))
        return super().handle(conn)

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        """What gunicorn's parser refuses (a header over its limits, a 414 request line, an invalid header value),
        and a failure outside the application, answered as problem+json instead of gunicorn's HTML page: gunicorn
        still chooses the status and logs the error (through PrivateLogger).  The detail never echoes the request."""
        captured = _Captured()
        super().handle_error(req, captured, addr, exc)
        status = captured.status()
        name = getattr(exc, "hdr", None) if type(exc).__name__ == "InvalidHeader" else None
        field = name.title() if isinstance(name, str) and _TOKEN.fullmatch(name) else None
        details = {
            414: f"the request line is longer than {self.cfg.limit_request_line} bytes",
            431: f"the request head has a field over {self.cfg.limit_request_field_size} bytes or more than "
                 f"{self.cfg.limit_request_fields} fields",
            500: "the collector failed to process the request",
        }
        detail = details.get(status, f"the request cannot be read: {type(exc).__name__}")
        try:
            client.sendall(_error_response(status, detail, field=field))
        except OSError:
            pass

    def handle_request(self, req: Any, conn: Any) -> Any:
        if conn.continue_sent:
            req._expected_100_continue = False  # the event loop has sent "100 Continue" already
        return super().handle_request(req, conn)


def die_with_master(arbiter: Any, worker: Any) -> None:
    "gunicorn post_fork hook: the kernel SIGKILLs this worker when the master dies, whatever killed the master"
    if not sys.platform.startswith("linux"):
        return  # elsewhere gunicorn's own parent check (about once a second) stops orphans
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        arbiter.log.warning("prctl(PR_SET_PDEATHSIG) failed: errno %d", ctypes.get_errno())
    if os.getppid() != worker.ppid:  # the master died before prctl took effect
        os._exit(1)


def stop_driver(arbiter: Any, worker: Any) -> None:
    """gunicorn worker_exit hook: the worker's aggregation driver (a leader's) stops and gives back the leases of the
    jobs it holds, so that they need not expire before another driver or a collection runs them"""
    extensions = getattr(getattr(worker, "wsgi", None), "extensions", {})
    driver = extensions.get("ldp_aggregation_driver")
    if driver is not None:
        driver.stop()


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
        if self.app_config.get("ROLE") == "shuffler":
            # only a shuffler loads its modules
            from .shuffler.app import create_shuffler_app

            return create_shuffler_app(self.app_config)
        return create_app(self.app_config)


def serve(database: str, *, host: str = "127.0.0.1", port: int = 8000, workers: int | None = None,
          threads: int = THREADS, config: dict | None = None, timeout: int = 30,
          request_timeout: float = REQUEST_TIMEOUT) -> None:
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
        "worker_class": CollectorWorker if request_timeout == REQUEST_TIMEOUT else
        type("CollectorWorker", (CollectorWorker,), {"request_timeout": request_timeout}),
        "threads": threads,
        "keepalive": KEEPALIVE,
        "post_fork": die_with_master,
        "worker_exit": stop_driver,
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
