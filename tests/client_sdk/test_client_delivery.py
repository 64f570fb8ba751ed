"""Delivery rules: a queued report leaves the queue only when the collector acknowledged it or rejected it by name.

Every whole-request failure (revoked key, wrong URL, redirect, captive portal, inconsistent counts, 413 of a
single report) keeps the queue, backs off and shows in ``status()``; requests carry one campaign each."""

from __future__ import annotations

import email.utils
import logging

import pytest

import client_sdk
from client_sdk import Client
from client_sdk.runtime.transport import Request, RequestTimeout, Response

from .fakes import SPEC as SPEC_BROWSER
from .fakes import listing, make_client

OTHER = client_sdk.load_spec({"name": "theme", "mechanism": "grr", "epsilon": 1.0, "domain": ["light", "dark"]})


@pytest.fixture
def listed_campaigns() -> list[dict]:
    return [listing(OTHER)]


def test_a_revoked_key_drops_nothing_and_is_reported(tmp_path, fake, caplog):
    seen: list[tuple[str | None, str | None]] = []
    client = make_client(tmp_path, fake, on_condition=lambda c, d: seen.append((c, d)))
    ids = {client.record("browser", "chrome").report_id for _ in range(30)}
    fake.script = [Response.from_json(401, {"field": "Authorization", "detail": "revoked"})] * 1000
    with caplog.at_level(logging.WARNING, logger="client_sdk"):
        result = client.flush(timeout=0.3)
    assert result.remaining == 30 and client.pending() == 30 and not fake.stored
    status = client.status()
    assert status.condition == "unauthorized" and "401" in status.detail and status.sent == 0
    assert seen[0][0] == "unauthorized" and caplog.text.count("delivery stalled") == 1
    fake.script = []  # the key is valid again
    result = client.flush(timeout=5)
    assert result.remaining == 0 and set(fake.stored) == ids
    assert client.status().condition is None and seen[-1] == (None, None)
    client.close()


@pytest.mark.parametrize(("answer", "condition"), [
    (Response.from_json(400, {"field": "reports", "detail": "broken"}), "refused"),
    (Response.from_json(403, {"detail": "wrong role"}), "forbidden"),
    (Response.from_json(404, {"detail": "no such route"}), "not_found"),
    (Response(301, {"location": "https://elsewhere.test/"}, b""), "redirected"),
    (Response(302, {"location": "https://portal.test/login"}, b"<html>"), "redirected"),
    (Response(200, {"content-type": "text/html"}, b"<html>Welcome to the airport wifi</html>"), "unexpected_answer"),
    (Response.from_json(200, {"accepted": 1, "duplicate": 0, "rejected": 0, "errors": []}), "unexpected_answer"),
    (Response.from_json(200, {"ok": True}), "unexpected_answer"),
    (Response.from_json(200, {"accepted": 2, "duplicate": 0, "rejected": 1, "errors": [
        {"index": 0, "report_id": "00000000-0000-4000-8000-000000000000", "field": "x", "reason": "y"}]}),
     "unexpected_answer"),
])
def test_whole_request_failures_keep_the_queue(tmp_path, fake, answer, condition):
    client = make_client(tmp_path, fake)
    for _ in range(3):
        client.record("browser", "firefox")
    fake.script = [answer] * 50
    result = client.flush(timeout=0.5)
    assert result.remaining == 3 and result.sent == 0
    assert client.status().condition == condition == result.condition
    fake.script = []
    assert client.flush().remaining == 0 and len(fake.stored) == 3
    client.close()


def test_413_splits_and_the_batch_size_grows_back(tmp_path, fake):
    client = make_client(tmp_path, fake, batch_size=8)
    for _ in range(24):
        client.record("browser", "chrome")
    fake.script = [Response(413, {}, b"")]
    assert client.flush().remaining == 0 and len(fake.stored) == 24
    assert [len(p) for p in fake.posts] == [8, 4, 8, 8, 4]
    client.close()


def test_413_for_a_single_report_keeps_it(tmp_path, fake):
    client = make_client(tmp_path, fake, batch_size=1)
    client.record("browser", "chrome")
    fake.script = [Response(413, {}, b"")] * 50
    result = client.flush(timeout=0.3)
    assert result.remaining == 1 and result.condition == "too_large"
    client.close()


def test_each_request_carries_one_campaign_in_a_random_order(tmp_path, fake, monkeypatch):
    client = make_client(tmp_path, fake, campaigns=["browser", "theme"])
    orders = []
    for pick in (lambda n: 0, lambda n: n - 1):  # two outcomes of the CSPRNG's draw
        monkeypatch.setattr(client_sdk.runtime.uploader.secrets, "randbelow", pick)
        for _ in range(3):
            client.record("browser", "chrome")
            client.record("theme", "dark")
        fake.posts.clear()
        assert client.flush().remaining == 0
        assert all(len({r["campaign"] for r in post}) == 1 for post in fake.posts)
        orders.append([post[0]["campaign"] for post in fake.posts])
    assert sorted(orders[0]) == sorted(orders[1]) == ["browser", "theme"]
    assert orders[0] != orders[1]
    client.close()


def test_retry_after_in_http_date_form(tmp_path, fake):
    sleeps: list[float] = []
    now = 1_700_000_000.0
    client = make_client(tmp_path, fake, sleep=sleeps.append, clock=lambda: now + sum(sleeps), backoff_cap=600)
    client.record("browser", "chrome")
    fake.script = [Response(503, {"retry-after": email.utils.formatdate(now + 120, usegmt=True)}, b"")]
    client.flush(timeout=600)
    assert len(sleeps) == 1 and 119 <= sleeps[0] <= 121
    client.close()


def test_close_passes_its_deadline_to_the_transport(tmp_path, fake):
    timeouts: list[float] = []

    class Offline:
        def send(self, request: Request, timeout: float) -> Response:
            timeouts.append(timeout)
            raise RequestTimeout("no network")

    client = make_client(tmp_path, fake, timeout=10.0, backoff_base=0.05, backoff_cap=0.1)
    client.record("browser", "chrome")
    client.transport = Offline()
    result = client.close(timeout=0.3)
    assert result.remaining == 1 and result.condition == "unreachable"
    assert len(timeouts) == 1 and timeouts[0] <= 0.3  # one attempt, never with the 10 s request timeout


def test_spec_fetches_happen_on_the_sender_thread_with_one_request(tmp_path, fake):
    import threading
    import time

    threads: list[str] = []

    def handler(request: Request) -> Response:
        threads.append(threading.current_thread().name)
        return fake(request)

    client = make_client(tmp_path, fake, background=True, campaigns=["browser", "theme"],
                         transport=client_sdk.runtime.transport.MockTransport(handler))
    deadline = time.monotonic() + 10
    while not client.prepare() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert client.record("browser", "chrome") and client.record("theme", "light")
    assert fake.spec_fetches == 1 and set(threads) == {"ldp-telemetry-sender"}
    client.close(timeout=5)


def test_against_the_collector_a_revoked_key_keeps_every_report(tmp_path):
    from client_sdk.runtime.transport import WSGITransport
    from collector import create_app
    from collector.storage import Storage

    db = tmp_path / "collector.db"
    app = create_app({"DATABASE": str(db), "RATE_LIMIT": 0})
    with Storage(db) as storage:
        old_key, old = storage.create_key("ingest", "2024-01-01")
        new_key, _ = storage.create_key("ingest", "2024-01-01")
        for spec in (SPEC_BROWSER, OTHER):
            storage.create_campaign(spec.to_dict(), "2024-01-01")
    client = Client("http://collector.test", old_key, tmp_path / "state", transport=WSGITransport(app),
                    background=False, policy=client_sdk.ReportPolicy.unlimited(), campaigns=["browser", "theme"],
                    backoff_base=0.01, backoff_cap=0.05)
    for _ in range(5):
        assert client.record("browser", "chrome") and client.record("theme", "dark")
    with Storage(db) as storage:
        storage.revoke_key(old.key_id)
    result = client.close(timeout=0.5)
    assert result.remaining == 10 and result.condition == "unauthorized"
    again = Client("http://collector.test", new_key, tmp_path / "state", transport=WSGITransport(app),
                   background=False, policy=client_sdk.ReportPolicy.unlimited())
    result = again.close(timeout=10)
    assert (result.sent, result.remaining) == (10, 0)
    with Storage(db) as storage:
        assert len(list(storage.iter_reports("browser"))) == len(list(storage.iter_reports("theme"))) == 5


@pytest.mark.parametrize(("header", "expected"), [
    ("120", 120.0), (" 7 ", 7.0), ("Wed, 21 Oct 2015 07:30:00 GMT", 60.0), ("Wed, 21 Oct 2015 07:27:00 GMT", 0.0),
    ("soon", None), ("nan", None), ("-5", 0.0),
])
def test_retry_after_forms(header, expected):
    from client_sdk.runtime.answers import retry_after

    now = email.utils.parsedate_to_datetime("Wed, 21 Oct 2015 07:29:00 GMT").timestamp()
    assert retry_after(Response(503, {"retry-after": header}), now) == expected
