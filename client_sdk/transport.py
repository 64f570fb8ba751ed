"""How the SDK talks HTTP: a one-method interface, its http.client implementation and in-memory fakes for tests.

Exceptions::

    LDPError (client_sdk.errors)
    ├── TransportError             retryable: the request may not have reached the collector
    │   ├── NetworkError           connection refused or reset, DNS failure, protocol error
    │   ├── RequestTimeout         no answer within the timeout
    │   └── CampaignUnavailable    a spec could not be fetched and none is cached
    └── UnknownCampaign            permanent: the collector has no campaign of that name

HTTP status codes are not exceptions here: :class:`Response` carries them and the client decides what each
answer means for the queue (see ``client_sdk.client``).  Standard library only; ``socket`` (and ``ssl`` for
https, ``urllib`` with proxies) is imported on the first request, so ``import client_sdk`` stays cheap.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .errors import CampaignUnavailable as CampaignUnavailable  # re-exported: client.py imports the errors from here
from .errors import NetworkError, RequestTimeout
from .errors import TransportError as TransportError
from .errors import UnknownCampaign as UnknownCampaign


@dataclass
class Request:
    "An HTTP request"

    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None

    def json(self) -> Any:
        import gzip

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


class UrllibTransport:
    """The production transport, standard library only.

    Direct connections (the default) speak HTTP/1.1 themselves (:class:`_Connection`: ``socket``, and ``ssl``
    for https, with the system's certificate checks) and are kept alive: a connection whose answer allows it
    waits for the next request to the same origin (at most ``MAX_IDLE`` per origin, closed by :meth:`close`), so
    a flush's requests share one TCP (and TLS) handshake.  A request that fails on a reused connection before any
    answer arrived (the server had closed it while idle) is sent once more on a new one: safe, since a GET
    changes nothing and the collector deduplicates reports by id.  Nagle's algorithm is off, and a request goes
    out in one write.

    ``use_env_proxies``: through ``urllib.request`` with the environment's proxies, one connection per request."""

    MAX_IDLE = 2

    def __init__(self, *, use_env_proxies: bool = False) -> None:
        import threading

        self._use_env_proxies = use_env_proxies
        self._opener: Any = None
        self._idle: dict[tuple[str, str, int | None], list[_Connection]] = {}
        self._idle_lock = threading.Lock()

    def send(self, request: Request, timeout: float) -> Response:
        if self._use_env_proxies:
            return self._send_urllib(request, timeout)
        origin, target = _split_url(request.url)
        while True:
            connection, reused = self._checkout(origin, timeout)
            try:
                if connection.sock is None:
                    self._connect(connection, request.url)
                status, headers, body, will_close = connection.exchange(request.method, target, request.headers,
                                                                        request.body)
            except TimeoutError as exc:
                connection.close()
                raise RequestTimeout(f"no answer from {_origin(request.url)} within {timeout} s") from exc
            except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError) as exc:
                connection.close()
                if reused:  # closed by the server while idle: once more on a new connection
                    continue
                raise NetworkError(f"request to {_origin(request.url)} failed: {type(exc).__name__}") from exc
            except (OSError, ValueError) as exc:  # malformed answers (ValueError), bad headers
                connection.close()
                raise NetworkError(f"request to {_origin(request.url)} failed: {type(exc).__name__}") from exc
            if will_close:
                connection.close()
            else:
                self._checkin(origin, connection)
            return Response(status, headers, body)

    @staticmethod
    def _connect(connection: _Connection, url: str) -> None:
        "Open the connection's socket (TLS included) with Nagle's algorithm off"
        try:
            connection.connect()
        except TimeoutError:
            raise
        except (OSError, ValueError) as exc:  # refused, unreachable, DNS failure, certificate errors
            connection.close()
            raise NetworkError(f"cannot reach {_origin(url)}: {exc}") from exc

    def _checkout(self, origin: tuple[str, str, int | None], timeout: float) -> tuple[_Connection, bool]:
        "An idle connection to ``origin`` (reused) or a new, not yet connected one"
        with self._idle_lock:
            idle = self._idle.get(origin)
            connection = idle.pop() if idle else None
        if connection is not None and connection.sock is not None:
            connection.set_timeout(timeout)
            return connection, True
        return _Connection(*origin, timeout), False

    def _checkin(self, origin: tuple[str, str, int | None], connection: _Connection) -> None:
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
        import io
        import sys
        from urllib.parse import urlsplit

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


MAX_LINE = 65536  # the limits of http.client: a header line, and the number of header fields
MAX_HEADERS = 100
_TLS: list[Any] = []  # the process's TLS context, made on the first https connection (loading CAs is slow)


class _Connection:
    """One HTTP/1.1 connection: the request written in one ``sendall``, the answer read by RFC 9112's framing.

    Only what a collector's answer needs, and cheaper than ``http.client``, which parses every answer's header
    with the ``email`` package: the status line (``1xx`` interim answers skipped), header fields (names lower
    case; a repeated field keeps its last value), and a body framed by ``Transfer-Encoding: chunked``,
    ``Content-Length`` or the end of the connection (none after 1xx, 204 and 304).  Malformed answers (not
    HTTP/1.x as RFC 9112 frames it) raise ``ValueError``, timeouts ``TimeoutError``, a connection the server
    closed before answering ``ConnectionResetError``.

    A plain connection on Linux is a blocking socket whose timeout is the kernel's (``SO_RCVTIMEO`` and
    ``SO_SNDTIMEO``, set again only when it changes): a socket with a Python timeout polls before every send and
    receive, two system calls more per request and per read.  TLS sockets, and other systems, keep
    ``settimeout``.  The answer is read from the socket into one buffer (no ``makefile`` layers)."""

    def __init__(self, scheme: str, host: str, port: int | None, timeout: float) -> None:
        self.scheme, self.host, self.timeout = scheme, host, timeout
        self.port = port or (443 if scheme == "https" else 80)
        default = port is None or port == (443 if scheme == "https" else 80)
        name = f"[{host}]" if ":" in host else host  # an IPv6 literal
        self.host_header = name if default else f"{name}:{self.port}"
        self.sock: Any = None
        self._reader: _Reader | None = None
        self._kernel_timeout = False

    def connect(self) -> None:
        import socket

        sock = socket.create_connection((self.host, self.port), self.timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.scheme == "https":
                sock = _tls_context().wrap_socket(sock, server_hostname=self.host)
            elif _KERNEL_TIMEOUTS:
                sock.settimeout(None)
                _set_kernel_timeout(sock, self.timeout)
                self._kernel_timeout = True
        except BaseException:
            sock.close()
            raise
        self.sock, self._reader = sock, _Reader(sock)

    def set_timeout(self, timeout: float) -> None:
        "The timeout of each send and receive from now on"
        if timeout == self.timeout or self.sock is None:
            return
        self.timeout = timeout
        if self._kernel_timeout:
            _set_kernel_timeout(self.sock, timeout)
        else:
            self.sock.settimeout(timeout)

    def close(self) -> None:
        sock, self.sock, self._reader = self.sock, None, None
        if sock is not None:
            sock.close()

    def exchange(self, method: str, target: str, headers: dict[str, str], body: bytes | None
                 ) -> tuple[int, dict[str, str], bytes, bool]:
        "Send one request, read its answer: status, headers, body and whether the connection must close"
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host_header}", "Accept-Encoding: identity"]
        for name, value in headers.items():
            lines.append(f"{name}: {value}")
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body or b'')}")
        joined = "".join(lines)
        if "\n" in joined or "\r" in joined or not target.isascii() or " " in target:
            raise ValueError("a header or the URL holds a line break, a space or non-ASCII text")
        try:
            self.sock.sendall("\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + (body or b""))
        except BlockingIOError:  # SO_SNDTIMEO ran out
            raise TimeoutError("the request could not be sent within the timeout") from None
        reader = self._reader
        assert reader is not None
        while True:
            line = reader.readline(MAX_LINE + 1)
            if not line:
                raise ConnectionResetError("the server closed the connection without answering")
            version, status = _status_line(line)
            fields = _header_fields(reader)
            if not 100 <= status < 200 or status == 101:
                break
        connection = fields.get("connection", "").lower()
        will_close = "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection)
        if 100 <= status < 200 or status in (204, 304) or method == "HEAD":
            return status, fields, b"", will_close
        coding = fields.get("transfer-encoding")
        if coding is not None:
            if coding.lower().rsplit(",", 1)[-1].strip() == "chunked":
                return status, fields, _chunked_body(reader), will_close
            return status, fields, reader.read(), True  # another coding: the body ends with the connection
        length = fields.get("content-length")
        if length is None:
            return status, fields, reader.read(), True
        if not length.strip().isdigit():
            raise ValueError(f"Content-Length {length!r}")
        size = int(length)
        data = reader.read(size)
        if len(data) != size:
            raise ValueError(f"the body ended after {len(data)} of {size} bytes")
        return status, fields, data, will_close


class _Reader:
    "Buffered reads from a socket: ``readline`` and ``read`` as a binary file's, without its layers"

    CHUNK = 65536

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        self.buffer = b""
        self.eof = False

    def _fill(self) -> bool:
        "Receive more; False at the end of the connection"
        if self.eof:
            return False
        try:
            data = self.sock.recv(self.CHUNK)
        except BlockingIOError:  # SO_RCVTIMEO ran out
            raise TimeoutError("no answer within the timeout") from None
        if not data:
            self.eof = True
            return False
        self.buffer = self.buffer + data if self.buffer else data
        return True

    def readline(self, limit: int) -> bytes:
        "Up to and including the next line feed, at most ``limit`` bytes (less at the end of the connection)"
        start = 0
        while True:
            end = self.buffer.find(b"\n", start, limit)
            if end >= 0:
                line, self.buffer = self.buffer[:end + 1], self.buffer[end + 1:]
                return line
            if len(self.buffer) >= limit:
                line, self.buffer = self.buffer[:limit], self.buffer[limit:]
                return line
            start = len(self.buffer)
            if not self._fill():
                line, self.buffer = self.buffer, b""
                return line

    def read(self, size: int = -1) -> bytes:
        "``size`` bytes (fewer at the end of the connection), or with -1 everything up to it"
        while (size < 0 or len(self.buffer) < size) and self._fill():
            pass
        if size < 0:
            size = len(self.buffer)
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data


def _kernel_timeouts() -> bool:
    "Whether plain sockets get their timeouts from the kernel here: Linux, whose ``struct timeval`` is two longs"
    import sys

    return sys.platform.startswith("linux")


_KERNEL_TIMEOUTS = _kernel_timeouts()


def _set_kernel_timeout(sock: Any, timeout: float) -> None:
    "SO_RCVTIMEO and SO_SNDTIMEO: a blocking send or receive that waits longer fails with EAGAIN"
    import socket
    import struct

    seconds = int(timeout)
    micros = int((timeout - seconds) * 1_000_000)
    value = struct.pack("@ll", seconds, micros or (seconds == 0))  # never 0 s 0 us: that would wait for ever
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)


def _status_line(line: bytes) -> tuple[str, int]:
    if len(line) > MAX_LINE:
        raise ValueError("status line too long")
    parts = line.split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not (len(parts[1]) == 3 and parts[1].isdigit()):
        raise ValueError(f"bad status line {line[:80]!r}")
    return parts[0].decode("ascii"), int(parts[1])


def _header_fields(reader: Any) -> dict[str, str]:
    "Header fields up to the empty line (names lower case, values decoded as ISO-8859-1 as http.client does)"
    fields: dict[str, str] = {}
    last = None
    readline = reader.readline
    for _ in range(MAX_HEADERS + 1):
        line = readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise ValueError("header line too long")
        if line in (b"\r\n", b"\n", b""):
            return fields
        text = line.decode("latin-1")
        if text[0] in " \t" and last is not None:  # obsolete line folding
            fields[last] += " " + text.strip()
            continue
        name, colon, value = text.partition(":")
        if not colon or not name or name != name.strip():
            raise ValueError(f"bad header line {text[:80]!r}")
        last = name.lower()
        fields[last] = value.strip()
    raise ValueError(f"more than {MAX_HEADERS} header fields")


def _chunked_body(reader: Any) -> bytes:
    parts: list[bytes] = []
    while True:
        line = reader.readline(MAX_LINE + 1)
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise ValueError(f"bad chunk size {line[:40]!r}") from None
        if size < 0:
            raise ValueError("negative chunk size")
        if size == 0:
            _header_fields(reader)  # trailer fields, up to the empty line
            return b"".join(parts)
        data = reader.read(size)
        if len(data) != size or reader.readline(MAX_LINE + 1) not in (b"\r\n", b"\n"):
            raise ValueError("a chunk ended early")
        parts.append(data)


def _tls_context() -> Any:
    "The system's default TLS context (certificate and host name checks on), one for the process"
    if not _TLS:
        import ssl

        context = ssl.create_default_context()
        context.set_alpn_protocols(["http/1.1"])
        _TLS.append(context)
    return _TLS[0]


_SPLIT: dict[str, tuple[tuple[str, str, int | None], str]] = {}


def _split_url(url: str) -> tuple[tuple[str, str, int | None], str]:
    """The origin (scheme, host, port) and the request target of an http(s) URL; NetworkError if it is not one.
    Remembered for the process (at most 64 URLs): a device sends the same two or three URLs every time."""
    split = _SPLIT.get(url)
    if split is None:
        split = _split_new_url(url)
        if len(_SPLIT) >= 64:
            _SPLIT.clear()
        _SPLIT[url] = split
    return split


def _split_new_url(url: str) -> tuple[tuple[str, str, int | None], str]:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        origin = (parts.scheme, parts.hostname or "", parts.port)
    except ValueError as exc:
        raise NetworkError(f"request to {url!r} failed: {exc}") from exc
    if origin[0] not in ("http", "https") or not origin[1]:
        raise NetworkError(f"cannot reach {url!r}: not an http(s) URL")
    return origin, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _origin(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
