"""How the SDK talks HTTP: a one-method interface, its http.client implementation and in-memory fakes for tests.

Exceptions::

    LDPError (client_sdk.errors)
    ├── TransportError             retryable: the request may not have reached the collector
    │   ├── NetworkError           connection refused or reset, DNS failure, protocol error
    │   ├── RequestTimeout         no answer within the timeout
    │   └── CampaignUnavailable    a spec could not be fetched and none is cached
    └── UnknownCampaign            permanent: the collector has no campaign of that name

HTTP status codes are not exceptions here: :class:`Response` carries them and the client decides what each
answer means for the queue (see ``client_sdk.runtime.client``).  Standard library only; ``http.client`` (and ``ssl``
for https, ``urllib.request`` with proxies) is imported on the first request, so ``import client_sdk`` stays
cheap.
"""

from __future__ import annotations

import gzip
import io
import json
import sys
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from ..errors import CampaignUnavailable as CampaignUnavailable  # re-exported: client.py imports the errors from here
from ..errors import NetworkError, RequestTimeout
from ..errors import TransportError as TransportError
from ..errors import UnknownCampaign as UnknownCampaign

# Function-level imports: the HTTP stack (urllib.request +38 ms, http.client +27 ms, ssl +19 ms, socket) loads
# with the first request, not with Client(), as the module docstring says.


@dataclass
class Request:
    "An HTTP request"

    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None

    def json(self) -> Any:
        data = self.body or b""
        if self.headers.get("Content-Encoding") == "gzip":
            data = gzip.decompress(data)
        return json.loads(data)


@dataclass
class Response:
    "An HTTP response; header names are lower case"

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def json(self) -> Any:
        return json.loads(self.body)

    @classmethod
    def from_json(cls, status: int, data: Any, headers: dict[str, str] | None = None) -> Response:
        content_type = "application/problem+json" if status >= 400 else "application/json"
        return cls(status, {"content-type": content_type, **(headers or {})}, json.dumps(data).encode())


class Transport(Protocol):
    "Anything that can send one request and return the response (or raise TransportError)"

    def send(self, request: Request, timeout: float) -> Response: ...


def _build_opener(use_env_proxies: bool) -> Any:
    "A urllib opener that returns 4xx/5xx (and 3xx) responses instead of raising or following them"
    import urllib.request

    class KeepErrors(urllib.request.HTTPErrorProcessor):
        def http_response(self, request: Any, response: Any) -> Any:
            return response

        https_response = http_response

    handlers: list[Any] = [KeepErrors()]
    if not use_env_proxies:
        handlers.append(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener(*handlers)


_OPENERS: dict[Any, Any] = {}


def _shared_opener(use_env_proxies: bool) -> Any:
    """One opener per proxy setting for the process (building one costs a millisecond per client; like
    ``urllib.request.urlopen``'s, an opener holds no per-request state)"""
    key: Any = False
    if use_env_proxies:
        import urllib.request

        key = tuple(sorted(urllib.request.getproxies().items()))  # the environment may change between clients
    opener = _OPENERS.get(key)
    if opener is None:
        opener = _OPENERS[key] = _build_opener(use_env_proxies)
    return opener


class HttpTransport:
    """The production transport: the standard library's ``http.client``, connections kept alive.

    One ``HTTPConnection`` (``HTTPSConnection`` for https, with the system's certificate and host name checks) is
    reused per origin: a connection whose answer allows it waits for the next request to the same origin (at most
    ``MAX_IDLE`` per origin, for clients that send from several threads; closed by :meth:`close`), so a flush's
    requests share one TCP (and TLS) handshake.  A request that fails on a reused connection before any answer
    arrived (the server had closed it while idle) is sent once more on a new one: safe, since a GET changes
    nothing and the collector deduplicates reports by id.  Nagle's algorithm is off (``TCP_NODELAY``); http.client
    writes a request with a ``bytes`` body in one send.  Redirects are never followed.

    ``use_env_proxies``: through ``urllib.request`` with the environment's proxies, one connection per request."""

    MAX_IDLE = 2

    def __init__(self, *, use_env_proxies: bool = False) -> None:
        self._use_env_proxies = use_env_proxies
        self._opener: Any = None
        self._idle: dict[tuple[str, str, int | None], list[Any]] = {}
        self._idle_lock = threading.Lock()

    def send(self, request: Request, timeout: float) -> Response:
        if self._use_env_proxies:
            return self._send_urllib(request, timeout)
        import http.client

        origin, target = _split_url(request.url)
        while True:
            connection, reused = self._checkout(origin, timeout)
            try:
                if connection.sock is None:
                    self._connect(connection, request.url)
                connection.request(request.method, target, body=request.body, headers=request.headers)
                answer = connection.getresponse()
                body = answer.read()
            except TimeoutError as exc:
                connection.close()
                raise RequestTimeout(f"no answer from {_origin(request.url)} within {timeout} s") from exc
            except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError) as exc:
                # RemoteDisconnected (closed without answering) is a ConnectionResetError
                connection.close()
                if reused:  # closed by the server while idle: once more on a new connection
                    continue
                raise NetworkError(f"request to {_origin(request.url)} failed: {type(exc).__name__}") from exc
            except (OSError, ValueError, http.client.HTTPException) as exc:  # malformed answers, bad headers or URL
                connection.close()
                raise NetworkError(f"request to {_origin(request.url)} failed: {type(exc).__name__}") from exc
            headers = {name.lower(): _unfold(value) for name, value in answer.getheaders()}
            if connection.sock is None:  # the answer ended the connection (http.client closed it)
                connection.close()
            else:
                self._checkin(origin, connection)
            return Response(answer.status, headers, body)

    @staticmethod
    def _connect(connection: Any, url: str) -> None:
        "Open the connection (TLS included), then turn Nagle's algorithm off"
        import socket

        try:
            connection.connect()
            connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except TimeoutError:
            raise
        except (OSError, ValueError) as exc:  # refused, unreachable, DNS failure, certificate errors
            connection.close()
            raise NetworkError(f"cannot reach {_origin(url)}: {exc}") from exc

    def _checkout(self, origin: tuple[str, str, int | None], timeout: float) -> tuple[Any, bool]:
        "An idle connection to ``origin`` (reused) or a new, not yet connected one"
        with self._idle_lock:
            idle = self._idle.get(origin)
            connection = idle.pop() if idle else None
        if connection is not None and connection.sock is not None:
            if connection.timeout != timeout:
                connection.timeout = timeout
                connection.sock.settimeout(timeout)
            return connection, True
        import http.client

        scheme, host, port = origin
        if scheme == "https":
            return http.client.HTTPSConnection(host, port, timeout=timeout, context=_tls_context()), False
        return http.client.HTTPConnection(host, port, timeout=timeout), False

    def _checkin(self, origin: tuple[str, str, int | None], connection: Any) -> None:
        with self._idle_lock:
            idle = self._idle.setdefault(origin, [])
            if len(idle) < self.MAX_IDLE:
                idle.append(connection)
                return
        connection.close()

    def close(self) -> None:
        "Close the idle connections (a later request opens a new one)"
        with self._idle_lock:
            connections = [c for idle in self._idle.values() for c in idle]
            self._idle.clear()
        for connection in connections:
            connection.close()

    def _send_urllib(self, request: Request, timeout: float) -> Response:
        import socket
        import urllib.error
        import urllib.request

        if self._opener is None:
            self._opener = _shared_opener(self._use_env_proxies)
        raw = urllib.request.Request(request.url, data=request.body, headers=request.headers, method=request.method)
        try:
            with self._opener.open(raw, timeout=timeout) as answer:
                body = answer.read()
                headers = {k.lower(): v for k, v in answer.headers.items()}
                return Response(answer.status, headers, body)
        except TimeoutError as exc:
            raise RequestTimeout(f"no answer from {_origin(request.url)} within {timeout} s") from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (socket.timeout, TimeoutError)):
                raise RequestTimeout(f"no answer from {_origin(request.url)} within {timeout} s") from exc
            raise NetworkError(f"cannot reach {_origin(request.url)}: {exc.reason}") from exc
        except (OSError, ValueError) as exc:  # resets, http.client protocol errors
            raise NetworkError(f"request to {_origin(request.url)} failed: {type(exc).__name__}") from exc


def __getattr__(name: str) -> Any:
    "``UrllibTransport``: the former name of :class:`HttpTransport`, deprecated (PEP 562)"
    if name == "UrllibTransport":
        warnings.warn("client_sdk.runtime.transport.UrllibTransport is deprecated: use HttpTransport",
                      DeprecationWarning, stacklevel=2)
        return HttpTransport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class MockTransport:
    "An in-memory transport: ``handler(request) -> Response`` (or raise TransportError); keeps every request"

    def __init__(self, handler: Callable[[Request], Response]) -> None:
        self.handler = handler
        self.requests: list[Request] = []

    def send(self, request: Request, timeout: float) -> Response:
        self.requests.append(request)
        return self.handler(request)


class WSGITransport:
    "Sends requests straight into a WSGI app (for example a Flask collector) without a socket"

    def __init__(self, app: Callable) -> None:
        self.app = app

    def send(self, request: Request, timeout: float) -> Response:
        parts = urlsplit(request.url)
        body = request.body or b""
        environ: dict[str, Any] = {
            "REQUEST_METHOD": request.method, "SCRIPT_NAME": "", "PATH_INFO": parts.path or "/",
            "QUERY_STRING": parts.query, "SERVER_NAME": parts.hostname or "localhost",
            "SERVER_PORT": str(parts.port or 80), "SERVER_PROTOCOL": "HTTP/1.1", "wsgi.version": (1, 0),
            "wsgi.url_scheme": parts.scheme or "http", "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr,
            "wsgi.multithread": False, "wsgi.multiprocess": False, "wsgi.run_once": False,
            "CONTENT_LENGTH": str(len(body)),
        }
        for name, value in request.headers.items():
            key = name.upper().replace("-", "_")
            if key == "CONTENT_TYPE":
                environ["CONTENT_TYPE"] = value
            elif key != "CONTENT_LENGTH":
                environ["HTTP_" + key] = value
        captured: dict[str, Any] = {}

        def start_response(status: str, headers: list, exc_info: Any = None) -> Callable:
            captured["status"], captured["headers"] = int(status.split()[0]), headers
            return lambda data: None

        result: Iterable[bytes] = self.app(environ, start_response)
        try:
            data = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        return Response(captured["status"], {k.lower(): v for k, v in captured["headers"]}, data)


_TLS: list[Any] = []  # the process's TLS context, made on the first https connection (loading CAs is slow)


def _tls_context() -> Any:
    "The system's default TLS context (certificate and host name checks on), one for the process"
    if not _TLS:
        import ssl

        context = ssl.create_default_context()
        context.set_alpn_protocols(["http/1.1"])
        _TLS.append(context)
    return _TLS[0]


def _unfold(value: str) -> str:
    "A header value with obsolete line folding (kept by http.client) as one line, as RFC 9112 §5.2 allows"
    return " ".join(line.strip() for line in value.splitlines()) if "\n" in value else value


def _split_url(url: str) -> tuple[tuple[str, str, int | None], str]:
    "The origin (scheme, host, port) and the request target of an http(s) URL; NetworkError if it is not one"
    try:
        parts = urlsplit(url)
        origin = (parts.scheme, parts.hostname or "", parts.port)
    except ValueError as exc:
        raise NetworkError(f"request to {url!r} failed: {exc}") from exc
    if origin[0] not in ("http", "https") or not origin[1]:
        raise NetworkError(f"cannot reach {url!r}: not an http(s) URL")
    return origin, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
