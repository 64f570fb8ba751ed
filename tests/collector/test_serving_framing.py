"""The real ``ldp-telemetry serve --workers 2`` on loopback, played by raw sockets: hostile framing (chunk sizes,
Content-Length and Transfer-Encoding) is answered by the event loop, no thread waits on it, and every error answer,
gunicorn's parser's included, is problem+json, with CORS headers on the open routes for an allowed origin.

Bounds here are socket timeouts (an answer must arrive within them), not benchmarks.
"""

from __future__ import annotations

import json
import socket
import urllib.request
from contextlib import ExitStack

import pytest

from .helpers import running_server

PAGE = "https://app.example.org"
ANSWER_TIMEOUT = 10.0  # seconds a raw socket waits for an answer (a frozen worker never sends one)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    "(host, port, url) of one ``serve --workers 2`` with an allowed web origin, for the whole module"
    tmp_path = tmp_path_factory.mktemp("framing")
    with running_server(tmp_path / "c.db", tmp_path / "server.log", workers=2,
                        extra=("--rate-limit", "0", "--cors-origin", PAGE)) as (url, _):
        yield "127.0.0.1", int(url.rsplit(":", 1)[1]), url


def read_answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    "Status, headers (lower-case names) and body of one answer framed by Content-Length"
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed without an answer: {data!r}"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    while len(body) < int(headers.get("content-length", 0)):
        chunk = sock.recv(65536)
        assert chunk, body
        body += chunk
    return int(lines[0].split()[1]), headers, body


def exchange(served, request: bytes) -> tuple[int, dict[str, str], bytes]:
    with socket.create_connection(served[:2], timeout=ANSWER_TIMEOUT) as sock:
        sock.sendall(request)
        return read_answer(sock)


def problem(answer: tuple[int, dict[str, str], bytes]) -> dict:
    status, headers, body = answer
    assert headers["content-type"] == "application/problem+json", answer
    document = json.loads(body)
    assert document["status"] == status and document["type"].startswith("urn:ldp-telemetry:problem:"), document
    return document


def livez(url: str) -> int:
    with urllib.request.urlopen(url + "/livez", timeout=ANSWER_TIMEOUT) as response:
        return response.status


def chunked_post(body: bytes, *headers: bytes) -> bytes:
    return b"\r\n".join([b"POST /v1/reports HTTP/1.1", b"Host: x", b"Content-Type: application/json",
                         b"Transfer-Encoding: chunked", *headers, b"", body])


HOSTILE_CHUNKS = {
    "negative": b"-6\r\nabc\r\n0\r\n\r\n", "negative, alone": b"-7\r\n", "signed": b"+5\r\nabcde\r\n0\r\n\r\n",
    "underscored": b"1_0\r\n" + b"a" * 16 + b"\r\n0\r\n\r\n", "prefixed": b"0x5\r\nabcde\r\n0\r\n\r\n",
    "bad extension": b"5;a b\r\nabcde\r\n0\r\n\r\n", "data without its CRLF": b"5\r\nabcdefg\r\n0\r\n\r\n",
    "bad trailer": b"0\r\nno colon\r\n\r\n", "line of 2,000 bytes": b"5;x=" + b"a" * 2000 + b"\r\nabcde\r\n0\r\n\r\n",
}


@pytest.mark.parametrize("body", HOSTILE_CHUNKS.values(), ids=HOSTILE_CHUNKS.keys())
def test_a_hostile_chunk_size_is_answered_400_by_the_event_loop_and_the_workers_keep_answering(served, body):
    """A negative chunk size used to move the loop's scan back to the start of its line: feed() never returned and
    the worker answered nothing until gunicorn killed it. One such request per worker, and two more"""
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.create_connection(served[:2], timeout=ANSWER_TIMEOUT))
                 for _ in range(4)]
        for sock in socks:
            sock.sendall(chunked_post(body))
        for sock in socks:
            assert problem(read_answer(sock))["status"] == 400
    for _ in range(4):  # both workers
        assert livez(served[2]) == 200


@pytest.mark.parametrize("size", [b"10000000000000005", b"ffffffffffffffffffffffff5", b"0" * 900 + b"900000"])
def test_a_chunk_size_above_the_limit_or_any_integer_is_answered_413(served, size):
    status, headers, body = answer = exchange(served, chunked_post(size + b"\r\nabcde\r\n0\r\n\r\n"))
    assert status == 413 and problem(answer)["field"] == "body"


def test_a_content_length_of_5000_digits_is_answered_413_and_the_worker_lives_on(served):
    "int() refuses over 4,300 digits: the ValueError ended the worker, and every connection it held"
    with socket.create_connection(served[:2], timeout=ANSWER_TIMEOUT) as held:
        held.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n")  # half a head, in one of the workers' loops
        for _ in range(4):  # both workers
            answer = exchange(served, b"POST /v1/reports HTTP/1.1\r\nHost: x\r\nContent-Length: " + b"9" * 5000
                              + b"\r\n\r\n")
            assert answer[0] == 413 and problem(answer)["field"] == "body"
        held.sendall(b"Connection: close\r\n\r\n")
        assert read_answer(held)[0] == 200


def test_chunk_extensions_and_trailers_are_accepted(served):
    "RFC 9112 allows them: the request reaches the application (401: no key), through the event loop and the parser"
    body = b'2;name="v \\" 1";flag\r\n{}\r\n0;last\r\nX-Checksum: 1\r\n\r\n'
    answer = exchange(served, chunked_post(body, b"Connection: close"))
    assert answer[0] == 401 and problem(answer)["field"] == "Authorization"


def test_chunk_size_lines_that_never_end_hold_no_thread(served):
    """80 connections each sending a chunk-size line of 1,025 to 8,190 bytes and no CRLF (gunicorn's parser reads
    lines up to 8,190 bytes, so a thread given one waited 10 s for the rest): each is answered 400 by the loop, and
    /livez is answered meanwhile on both workers"""
    with ExitStack() as stack:
        socks = []
        for index in range(80):
            sock = stack.enter_context(socket.create_connection(served[:2], timeout=ANSWER_TIMEOUT))
            sock.sendall(chunked_post(b"5;x=" + b"a" * (1025 + index * 90)))
            socks.append(sock)
        for _ in range(4):
            assert livez(served[2]) == 200
        for sock in socks:
            assert problem(read_answer(sock))["status"] == 400


@pytest.mark.parametrize(("headers", "status", "field"), [
    (b"Content-Length: 3\r\nTransfer-Encoding: chunked", 400, "Content-Length"),
    (b"Content-Length: 3\r\nContent-Length: 3", 400, "Content-Length"), (b"Content-Length: +3", 400, "Content-Length"),
    (b"Transfer-Encoding: gzip", 400, "Transfer-Encoding"), (b"Transfer-Encoding: br, chunked", 501,
                                                             "Transfer-Encoding"),
])
def test_malformed_framing_in_the_head_is_answered_by_the_event_loop(served, headers, status, field):
    answer = exchange(served, b"POST /v1/reports HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n\r\nabc")
    assert answer[0] == status and problem(answer)["field"] == field


LIVEZ = b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
REFUSED_BY_THE_PARSER = {
    "a 60 KiB header": (LIVEZ + b"X-Long: " + b"a" * 60 * 1024 + b"\r\n\r\n", 431),
    "150 headers": (LIVEZ + b"".join(b"X-%d: 1\r\n" % n for n in range(150)) + b"\r\n", 431),
    "a 70 KiB head": (LIVEZ + b"".join(b"X-%d: %s\r\n" % (n, b"a" * 7000) for n in range(10)) + b"\r\n", 431),
    "a 9,000-character URL": (b"GET /livez?" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    "a control character in Authorization": (b"GET /v1/campaigns HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                                             b"\x01\x7f\r\n\r\n", 400),
    "an invalid header name": (LIVEZ + b"Bad Header: 1\r\n\r\n", 400),
    "an unknown HTTP version": (b"GET /livez HTTP/7.1\r\nHost: x\r\n\r\n", 400),
}


@pytest.mark.parametrize(("request_bytes", "status"), REFUSED_BY_THE_PARSER.values(),
                         ids=REFUSED_BY_THE_PARSER.keys())
def test_what_gunicorns_parser_refuses_is_answered_as_problem_json(served, request_bytes, status):
    "gunicorn chooses the status, the worker writes the answer: never gunicorn's HTML page"
    answer = exchange(served, request_bytes)
    assert answer[0] == status
    assert "a" * 100 not in problem(answer)["detail"]  # the request is not echoed


def test_a_non_ascii_key_is_an_unknown_key(served):
    answer = exchange(served, "GET /v1/campaigns HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer é\r\n"
                              "Connection: close\r\n\r\n".encode())
    assert answer[0] == 401 and problem(answer)["field"] == "Authorization"


def test_the_event_loops_answers_on_an_open_route_carry_cors_headers_for_an_allowed_origin(served):
    "A page reads the status of a 413 (and a framing 400) as of any answer of /v1/reports; another origin does not"
    for origin, allowed in ((PAGE, True), ("https://evil.example.org", False)):
        too_large = b"POST /v1/reports HTTP/1.1\r\nHost: x\r\nOrigin: %s\r\nContent-Type: application/json\r\n" \
                    b"Content-Length: 999999999\r\n\r\n" % origin.encode()
        bad_chunk = chunked_post(b"zz\r\n", b"Origin: " + origin.encode())
        for request, status in ((too_large, 413), (bad_chunk, 400)):
            answer = exchange(served, request)
            headers = answer[1]
            assert answer[0] == status and "origin" in headers["vary"].lower()
            assert headers.get("access-control-allow-origin") == (origin if allowed else None)
            assert ("retry-after" in headers.get("access-control-expose-headers", "").lower()) is allowed
    admin = exchange(served, b"POST /v1/campaigns HTTP/1.1\r\nHost: x\r\nOrigin: %s\r\nContent-Length: 999999999"
                             b"\r\n\r\n" % PAGE.encode())
    assert admin[0] == 413 and not any(name.startswith("access-control") for name in admin[1])


def test_a_body_that_stops_mid_chunk_is_answered_408_and_holds_no_thread(tmp_path):
    "The single thread answers /livez while the chunked body waits; then the loop answers 408, with CORS headers"
    with running_server(tmp_path / "c.db", tmp_path / "log", workers=1,
                        extra=("--rate-limit", "0", "--threads", "1", "--request-timeout", "1", "--cors-origin",
                               PAGE)) as (url, _):
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT) as sock:
            sock.sendall(chunked_post(b"a\r\n0\r\n\r\n", b"Origin: " + PAGE.encode()))  # 5 of 10 bytes
            assert livez(url) == 200
            answer = read_answer(sock)
        assert answer[0] == 408 and problem(answer)["type"].endswith(":request-timeout")
        assert answer[1]["access-control-allow-origin"] == PAGE


def test_operations_md_states_the_framing_and_parser_limits_the_code_has():
    from pathlib import Path

    from gunicorn.config import Config

    from collector.request_buffer import MAX_CHUNK_LINE

    text = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()
    section = text.split("## Workers, threads and slow clients", 1)[1].split("\n## ", 1)[0]
    config = Config()
    assert f"within {MAX_CHUNK_LINE:,} bytes" in section
    assert f"a header over {config.limit_request_field_size:,} bytes" in section
    assert f"more than {config.limit_request_fields} of them" in section
    assert f"a request line over {config.limit_request_line:,} bytes" in section


@pytest.mark.parametrize(("error", "status"), [("RuntimeError", 500), ("LimitRequestLine", 414),
                                               ("InvalidHeader", 400)])
def test_the_workers_error_answer_is_problem_json_and_never_echoes_the_request(error, status):
    "CollectorWorker.handle_error, also for a failure outside the application (gunicorn's 500), on a socket pair"
    import logging

    from gunicorn.config import Config
    from gunicorn.http import errors

    from collector.server import CollectorWorker

    exc = {"RuntimeError": RuntimeError("secret-request-data"),
           "LimitRequestLine": errors.LimitRequestLine(9000, 4094),
           "InvalidHeader": errors.InvalidHeader("AUTHORIZATION")}[error]
    worker = CollectorWorker.__new__(CollectorWorker)  # what handle_error needs of a worker: its config and log
    worker.cfg, worker.log = Config(), logging.getLogger("test.worker")
    server_side, client_side = socket.socketpair()
    with server_side, client_side:
        client_side.settimeout(ANSWER_TIMEOUT)
        worker.handle_error(None, server_side, ("127.0.0.1", 1), exc)
        answer = read_answer(client_side)
    document = problem(answer)
    assert answer[0] == status and "secret" not in json.dumps(document) and answer[1]["connection"] == "close"
    assert document.get("field") == ("Authorization" if error == "InvalidHeader" else None)
