"""The one admin-API client: a 2xx gives (status, JSON); any other answer, or none, one AdminApiError with the
message the CLI prints, the status and the problem body."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from collector.admin_client import AdminClient, campaign_path
from collector.errors import AdminApiError

from .helpers import loopback_http_server


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.startswith("/v1/campaigns/a%2Fb"):
            self.answer(200, {"path": self.path, "auth": self.headers["Authorization"]})
        elif self.path == "/v1/campaigns/gone":
            self.answer(404, {"type": "urn:ldp-telemetry:problem:not-found", "detail": "no campaign 'gone'"},
                        "application/problem+json")
        else:
            self.answer(500, "oops", "text/plain")

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.answer(201, {"echo": body})

    def answer(self, status: int, body: object, content_type: str = "application/json") -> None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def url() -> Iterator[str]:
    with loopback_http_server(Handler) as base:
        yield base + "/"


def test_a_2xx_gives_status_and_json_with_the_token_and_a_quoted_campaign(url):
    with AdminClient(url, "tok") as client:
        assert client.request("GET", campaign_path("a/b", "/estimate"), params={"since": "2025-01-01"}) == (
            200, {"path": "/v1/campaigns/a%2Fb/estimate?since=2025-01-01", "auth": "Bearer tok"})
        assert client.request("POST", "/v1/campaigns", {"name": "x"}) == (201, {"echo": {"name": "x"}})


def test_a_problem_answer_is_one_error_with_status_problem_and_the_cli_message(url):
    with AdminClient(url, "tok") as client, pytest.raises(AdminApiError) as failed:
        client.get("/v1/campaigns/gone")
    assert (str(failed.value), failed.value.status) == ("the collector answered HTTP 404: no campaign 'gone'", 404)
    assert failed.value.problem["type"].endswith(":not-found")
    with AdminClient(url, "tok") as client, pytest.raises(AdminApiError) as failed:
        client.get("/other")
    assert (str(failed.value), failed.value.status, failed.value.problem) == ("the collector answered HTTP 500",
                                                                              500, {})


def test_no_answer_is_the_same_error_without_a_status():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with AdminClient(f"http://127.0.0.1:{port}", "tok", timeout=5) as client, pytest.raises(AdminApiError) as failed:
        client.get("/v1/campaigns")
    assert failed.value.status is None
    reason = "[Errno 111] Connection refused"  # the operating system's words, as urllib gave them
    assert str(failed.value) == f"cannot reach the collector at http://127.0.0.1:{port} ({reason})"
