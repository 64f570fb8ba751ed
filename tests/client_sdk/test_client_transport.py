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
