"""The SDK transports: http.client against a loopback server, and the in-memory fakes."""

from __future__ import annotations

import http.server
import socket
import threading
import time

import pytest

from client_sdk.runtime.transport import (
    HttpTransport,
    MockTransport,
    NetworkError,
    Request,
    RequestTimeout,
    Response,
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
    transport = HttpTransport()
    ok = transport.send(Request("POST", server + "/echo", {"Content-Type": "application/json"}, b'{"a": 1}'), 5)
    assert ok.status == 200 and ok.json() == {"a": 1}
    busy = transport.send(Request("POST", server + "/busy", {}, b"{}"), 5)
    assert busy.status == 503 and busy.headers["retry-after"] == "7"
    portal = transport.send(Request("POST", server + "/portal", {}, b"{}"), 5)
    assert portal.status == 302 and portal.headers["location"] == "/login"  # redirects are never followed


def test_urllib_timeouts_and_refusals_are_retryable_errors(server):
    transport = HttpTransport()
    with pytest.raises(RequestTimeout):
        transport.send(Request("POST", server + "/slow", {}, b"{}"), 0.2)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(NetworkError):
        transport.send(Request("POST", f"http://127.0.0.1:{port}/", {}, b"{}"), 1)


def test_the_former_name_still_works_and_warns():
    from client_sdk.runtime import transport

    with pytest.warns(DeprecationWarning, match="HttpTransport"):
        assert transport.UrllibTransport is HttpTransport


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
    assert "client_sdk.mechanisms.rappor" in loaded and not {"threading", "client_sdk.runtime.client"} & loaded


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
        if self.path == "/slow":
            time.sleep(0.6)
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
    transport = HttpTransport()
    for i in range(3):
        answer = transport.send(Request("POST", url + "/echo", {}, b'{"n": %d}' % i), 5)
        assert answer.status == 200 and answer.json() == {"n": i}
    assert len(httpd.connections) == 1
    (idle,) = [c for pool in transport._idle.values() for c in pool]
    assert idle.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    transport.close()
    assert httpd.closed.wait(5) and not transport._idle  # closing the transport closes its idle connections


def test_a_kept_alive_connection_times_out_with_each_requests_timeout(keep_alive_server):
    "The timeout of a reused connection follows each request's, and a timed-out connection is not reused"
    httpd, url = keep_alive_server
    transport = HttpTransport()
    assert transport.send(Request("POST", url + "/echo", {}, b"1"), 5).body == b"1"
    (idle,) = [c for pool in transport._idle.values() for c in pool]
    assert idle.sock.gettimeout() == 5
    with pytest.raises(RequestTimeout):
        transport.send(Request("POST", url + "/slow", {}, b"2"), 0.2)
    assert len(httpd.connections) == 1 and not any(transport._idle.values())  # closed after the timeout
    assert transport.send(Request("POST", url + "/echo", {}, b"3"), 5).body == b"3"
    transport.close()


def test_a_connection_closed_while_idle_is_replaced_without_an_error(keep_alive_server):
    httpd, url = keep_alive_server
    transport = HttpTransport()
    assert transport.send(Request("POST", url + "/drop", {}, b"1"), 5).body == b"1"
    assert httpd.closed.wait(5)  # the server has hung up; the transport still holds the connection as idle
    assert transport.send(Request("POST", url + "/echo", {}, b"2"), 5).body == b"2"
    assert len(httpd.connections) == 2
    transport.close()


def test_closing_a_client_closes_its_transports_connections(keep_alive_server, tmp_path):
    from client_sdk import Client

    httpd, url = keep_alive_server
    transport = HttpTransport()
    transport.send(Request("POST", url + "/echo", {}, b"1"), 5)
    client = Client(url, "key", tmp_path / "device", transport=transport, background=False)
    client.close(timeout=0)
    assert httpd.closed.wait(5) and not transport._idle


class CannedServer:
    "A loopback server that answers each connection's requests with canned bytes, one answer per request read"

    def __init__(self, answers: list[bytes], close_after: bool = False) -> None:
        self.answers, self.close_after = list(answers), close_after
        self.requests: list[bytes] = []
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while self.answers:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                while self.answers:
                    request = self._read_request(conn)
                    if request is None:
                        break
                    self.requests.append(request)
                    conn.sendall(self.answers.pop(0))
                    if self.close_after:
                        break

    @staticmethod
    def _read_request(conn: socket.socket) -> bytes | None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(body) < length:
            body += conn.recv(65536)
        return data

    def close(self) -> None:
        self.listener.close()


@pytest.mark.parametrize("answer, body", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", b"hello"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nhel\r\n2\r\nlo\r\n0\r\nT: 1\r\n\r\n", b"hello"),
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", b"ok"),
    (b"HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n", b""),
])
def test_bodies_framed_by_length_chunks_or_nothing_keep_the_connection(answer, body):
    server = CannedServer([answer, b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext"])
    transport = HttpTransport()
    first = transport.send(Request("POST", server.url + "/v1/reports?x=1", {"Authorization": "Bearer k"}, b"{}"), 5)
    assert (first.status, first.body) == (200 if body else 204, body)
    assert transport.send(Request("GET", server.url + "/v1/campaigns"), 5).body == b"next"
    assert server.connections == 1  # kept alive across both
    head = server.requests[0].split(b"\r\n\r\n")[0].split(b"\r\n")
    assert head[0] == b"POST /v1/reports?x=1 HTTP/1.1" and b"Authorization: Bearer k" in head
    assert f"Host: {server.url[7:]}".encode() in head and b"Content-Length: 2" in head
    transport.close()
    server.close()


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\nX-Folded: a\r\n  b\r\n\r\nok",  # no length: the body ends with the connection
])
def test_answers_that_end_the_connection_are_read_and_not_kept(answer):
    server = CannedServer([answer, b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext"], close_after=True)
    transport = HttpTransport()
    response = transport.send(Request("GET", server.url + "/"), 5)
    assert response.status == 200 and response.body == b"ok"
    assert response.headers.get("x-folded", "a b") == "a b"
    assert not transport._idle.get(("http", "127.0.0.1", int(server.url.rsplit(":", 1)[1])))
    assert transport.send(Request("GET", server.url + "/"), 5).body == b"next"
    assert server.connections == 2
    transport.close()
    server.close()


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",  # the connection ends inside the body
    b"SMTP ready\r\n\r\n",
    b"HTTP/1.1 2000 OK\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"HTTP/1.1 200 OK\r\n" + b"X: 1\r\n" * 101 + b"\r\n",
])
def test_malformed_answers_are_network_errors(answer):
    "(http.client reads a header line without a colon, and a negative Content-Length, leniently: not listed here)"
    server = CannedServer([answer], close_after=True)
    with pytest.raises(NetworkError):
        HttpTransport().send(Request("GET", server.url + "/"), 5)
    server.close()


def test_headers_with_line_breaks_are_refused_before_sending():
    server = CannedServer([b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"])
    with pytest.raises(NetworkError):
        HttpTransport().send(Request("GET", server.url + "/", {"Authorization": "Bearer k\r\nX-Evil: 1"}), 5)
    assert not server.requests
    server.close()


def test_https_checks_the_certificate_and_speaks_tls(tmp_path, monkeypatch):
    "A self-signed server: refused by the default context, answered once the test trusts its certificate"
    import shutil
    import ssl
    import subprocess

    from client_sdk.runtime import transport as module

    if shutil.which("openssl") is None:
        pytest.fail("needs the openssl command to make a certificate (scripts/test installs it)")  # never a skip
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
                   check=True, capture_output=True)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        for _ in range(2):
            conn, _ = listener.accept()
            try:
                with server_context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(65536)
                    tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nsecret")
            except (ssl.SSLError, OSError):
                conn.close()

    threading.Thread(target=serve, daemon=True).start()
    url = f"https://localhost:{port}/"
    monkeypatch.setattr(module, "_TLS", [])
    with pytest.raises(NetworkError, match="certificate"):
        HttpTransport().send(Request("GET", url), 5)
    trusting = ssl.create_default_context(cafile=str(cert))
    monkeypatch.setattr(module, "_TLS", [trusting])
    assert HttpTransport().send(Request("GET", url), 5).body == b"secret"
    listener.close()
