"""The SDK transports: urllib against a loopback server, and the in-memory fakes."""

from __future__ import annotations

import http.server
import socket
import threading
import time

import pytest

from client_sdk.transport import (
    MockTransport,
    NetworkError,
    Request,
    RequestTimeout,
    Response,
    UrllibTransport,
    WSGITransport,
)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        body = self.rfile.read(length)
        if self.path == "/slow":
            time.sleep(0.6)
        status = {"/busy": 503, "/portal": 302}.get(self.path, 200)
        self.send_response(status)
        self.send_header("Retry-After", "7")
        self.send_header("Location", "/login")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # the client of the timeout test hangs up early: a broken pipe is expected


@pytest.fixture
def server():
    httpd = QuietServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_urllib_returns_statuses_instead_of_raising(server):
    transport = UrllibTransport()
    ok = transport.send(Request("POST", server + "/echo", {"Content-Type": "application/json"}, b'{"a": 1}'), 5)
    assert ok.status == 200 and ok.json() == {"a": 1}
    busy = transport.send(Request("POST", server + "/busy", {}, b"{}"), 5)
    assert busy.status == 503 and busy.headers["retry-after"] == "7"
    portal = transport.send(Request("POST", server + "/portal", {}, b"{}"), 5)
    assert portal.status == 302 and portal.headers["location"] == "/login"  # redirects are never followed


def test_urllib_timeouts_and_refusals_are_retryable_errors(server):
    transport = UrllibTransport()
    with pytest.raises(RequestTimeout):
        transport.send(Request("POST", server + "/slow", {}, b"{}"), 0.2)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(NetworkError):
        transport.send(Request("POST", f"http://127.0.0.1:{port}/", {}, b"{}"), 1)


def test_mock_transport_records_requests():
    transport = MockTransport(lambda request: Response.from_json(201, {"ok": True}))
    answer = transport.send(Request("GET", "http://x/y"), 1)
    assert answer.status == 201 and transport.requests[0].url == "http://x/y"


def test_wsgi_transport_calls_the_app():
    def app(environ, start_response):
        start_response("202 Accepted", [("X-Path", environ["PATH_INFO"] + "?" + environ["QUERY_STRING"])])
        return [environ["wsgi.input"].read()]

    answer = WSGITransport(app).send(Request("POST", "http://h/a/b?c=1", {"Content-Type": "text/plain"}, b"hi"), 1)
    assert (answer.status, answer.body, answer.headers["x-path"]) == (202, b"hi", "/a/b?c=1")


def test_importing_the_sdk_loads_no_http_stack_and_no_runtime():
    import json
    import subprocess
    import sys

    code = "import sys, json, client_sdk; print(json.dumps(sorted(sys.modules)))"
    loaded = set(json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                           text=True).stdout))
    heavy = {"urllib.request", "http.client", "email", "ssl", "socket", "gzip", "uuid", "sqlite3", "logging"}
    assert not heavy & loaded
    code = "import sys, json, client_sdk; client_sdk.Client; print(json.dumps(sorted(sys.modules)))"
    loaded = set(json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                           text=True).stdout))
    assert "sqlite3" in loaded and not {"urllib.request", "http.client", "ssl"} & loaded  # only a request loads them



def test_importing_the_sdk_or_perturbing_loads_no_threading():
    "Spec parsing and perturbation (RAPPOR's PRR cache lock included) run without the threading module"
    import json
    import subprocess
    import sys

    code = ("import sys, json, client_sdk; "
            "client_sdk.mechanism_from_spec({'name': 'r', 'mechanism': 'rappor', "
            "'rappor': {'k': 8, 'h': 2, 'm': 4, 'f': 0.5, 'p': 0.5, 'q': 0.75}}).perturb('x'); "
            "print(json.dumps(sorted(sys.modules)))")
    loaded = set(json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                           text=True).stdout))
    assert "client_sdk.mechanisms.rappor" in loaded and not {"threading", "client_sdk.client"} & loaded


class KeepAliveHandler(http.server.BaseHTTPRequestHandler):
    "HTTP/1.1 with kept-alive connections; ``/drop`` answers as if the connection stayed open, then closes it"

    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.server.connections.append(self.client_address)  # type: ignore[attr-defined]

    def finish(self) -> None:
        super().finish()
        self.server.closed.set()  # type: ignore[attr-defined]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        if self.path == "/drop":
            self.close_connection = True  # the server's idle timeout, as a client sees it

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def keep_alive_server():
    httpd = QuietServer(("127.0.0.1", 0), KeepAliveHandler)
    httpd.connections, httpd.closed = [], threading.Event()  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_requests_share_one_kept_alive_connection_without_nagle(keep_alive_server):
    httpd, url = keep_alive_server
    transport = UrllibTransport()
    for i in range(3):
        answer = transport.send(Request("POST", url + "/echo", {}, b'{"n": %d}' % i), 5)
        assert answer.status == 200 and answer.json() == {"n": i}
    assert len(httpd.connections) == 1
    (idle,) = [c for pool in transport._idle.values() for c in pool]
    assert idle.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    transport.close()
    assert httpd.closed.wait(5) and not transport._idle  # closing the transport closes its idle connections


def test_a_connection_closed_while_idle_is_replaced_without_an_error(keep_alive_server):
    httpd, url = keep_alive_server
    transport = UrllibTransport()
    assert transport.send(Request("POST", url + "/drop", {}, b"1"), 5).body == b"1"
    assert httpd.closed.wait(5)  # the server has hung up; the transport still holds the connection as idle
    assert transport.send(Request("POST", url + "/echo", {}, b"2"), 5).body == b"2"
    assert len(httpd.connections) == 2
    transport.close()


def test_closing_a_client_closes_its_transports_connections(keep_alive_server, tmp_path):
    from client_sdk import Client

    httpd, url = keep_alive_server
    transport = UrllibTransport()
    transport.send(Request("POST", url + "/echo", {}, b"1"), 5)
    client = Client(url, "key", tmp_path / "device", transport=transport, background=False)
    client.close(timeout=0)
    assert httpd.closed.wait(5) and not transport._idle
