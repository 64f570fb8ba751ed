"""client_sdk.Client against an in-memory fake collector: batching, retries, specs, close."""

from __future__ import annotations

import json
import logging
import time

import pytest

import client_sdk
from client_sdk import Client, ReportPolicy
from client_sdk.runtime.transport import NetworkError, Response

from .fakes import SPEC, make_client


def test_record_perturbs_at_once_and_queues_only_the_report(tmp_path, fake):
    client = make_client(tmp_path, fake)
    recorded = client.record("browser", "safari")
    assert recorded and recorded.status is client_sdk.RecordStatus.QUEUED
    assert client.pending() == 1
    raw = (tmp_path / "state" / "ldp-telemetry.sqlite3").read_bytes()
    assert b"safari" not in raw.replace(json.dumps(SPEC.to_dict()).encode(), b"")
    result = client.flush()
    assert (result.sent, result.remaining) == (1, 0)
    sent = fake.posts[0][0]
    assert set(sent) == {"report_id", "campaign", "fingerprint", "payload"}
    assert sent["report_id"] == recorded.report_id and sent["fingerprint"] == SPEC.fingerprint
    client_sdk.mechanism_from_spec(SPEC).check_payload(sent["payload"])
    client.close()


def test_batches_respect_batch_size_and_authorization(tmp_path, fake):
    client = make_client(tmp_path, fake, batch_size=4)
    for _ in range(10):
        client.record("browser", "chrome")
    client.flush()
    assert [len(p) for p in fake.posts] == [4, 4, 2]
    request = client.transport.requests[-1]  # type: ignore[attr-defined]
    assert request.headers["Authorization"] == "Bearer ldp_key"
    client.close()


def test_large_batches_are_gzipped(tmp_path, fake):
    client = make_client(tmp_path, fake)
    for _ in range(100):
        client.record("browser", "chrome")
    client.flush()
    assert client.transport.requests[-1].headers.get("Content-Encoding") == "gzip"  # type: ignore[attr-defined]
    assert len(fake.stored) == 100
    client.close()


@pytest.mark.parametrize("failure", [
    Response(503, {}, b""), Response(500, {}, b"oops"), NetworkError("refused"), Response(408, {}, b""),
])
def test_retryable_failures_resend_the_same_reports(tmp_path, fake, failure):
    client = make_client(tmp_path, fake)
    ids = [client.record("browser", "firefox").report_id for _ in range(3)]
    fake.script = [failure, failure]
    result = client.flush()
    assert result.remaining == 0 and len(fake.posts) == 3
    assert fake.posts[0] == fake.posts[1] == fake.posts[2]  # same ids, same draws
    assert sorted(fake.stored) == sorted(ids)
    client.close()


def test_backoff_is_exponential_with_full_jitter_and_honours_retry_after(tmp_path, fake):
    sleeps: list[float] = []
    client = make_client(tmp_path, fake, sleep=sleeps.append, backoff_base=1.0, backoff_cap=100.0,
                         clock=lambda: 1000.0 + sum(sleeps))
    client.record("browser", "chrome")
    fake.script = [Response(503, {}, b"")] * 5 + [Response(429, {"retry-after": "30"}, b"")]
    client.flush(timeout=100)
    assert len(sleeps) == 6
    for attempt, slept in enumerate(sleeps[:5]):
        assert 0 <= slept <= 2 ** attempt
    assert sleeps[5] >= 30
    client.close()


def test_rejected_reports_are_removed_by_name_and_logged(tmp_path, fake, caplog):
    client = make_client(tmp_path, fake)
    first = client.record("browser", "chrome").report_id
    second = client.record("browser", "chrome").report_id
    fake.script = [Response.from_json(200, {"accepted": 1, "duplicate": 0, "rejected": 1, "errors": [
        {"index": 1, "report_id": second, "field": "reports[1].payload", "reason": "bad"}]})]
    with caplog.at_level(logging.WARNING, logger="client_sdk"):
        result = client.flush()
    assert (result.sent, result.rejected, result.remaining) == (1, 1, 0)
    assert "reports[1].payload" in caplog.text and first not in caplog.text
    client.close()


def test_413_splits_the_batch_instead_of_dropping(tmp_path, fake):
    client = make_client(tmp_path, fake, batch_size=8)
    for _ in range(8):
        client.record("browser", "chrome")
    fake.script = [Response(413, {}, b"")]
    result = client.flush()
    assert result.remaining == 0 and len(fake.stored) == 8
    assert [len(p) for p in fake.posts] == [8, 4, 4]
    client.close()


def test_close_is_bounded_and_keeps_reports_for_the_next_start(tmp_path, fake):
    client = make_client(tmp_path, fake, sleep=time.sleep, backoff_base=0.05, backoff_cap=0.1)
    for _ in range(5):
        client.record("browser", "chrome")
    fake.script = [NetworkError("down")] * 1000
    started = time.monotonic()
    result = client.close(timeout=0.5)
    assert time.monotonic() - started < 2.0
    assert result.remaining == 5 and len(fake.posts) == 1  # one attempt offline, no backoff waits in close
    fake.script = []
    again = make_client(tmp_path, fake)
    assert again.pending() == 5
    assert again.flush().remaining == 0 and len(fake.stored) == 5
    again.close()


def test_specs_are_cached_and_used_when_the_collector_is_down(tmp_path, fake):
    now = [1000.0]
    client = make_client(tmp_path, fake, clock=lambda: now[0], spec_ttl=60)
    client.record("browser", "chrome")
    client.record("browser", "chrome")
    assert fake.spec_fetches == 1
    client.close()
    restarted = make_client(tmp_path, fake, clock=lambda: now[0], spec_ttl=60)
    restarted.record("browser", "chrome")
    assert fake.spec_fetches == 1  # from the state file
    now[0] += 120
    fake.spec_status = 503
    assert restarted.prepare() is True  # the refresh failed, the stale spec is still there
    assert restarted.record("browser", "chrome")  # stale cache beats no report
    assert restarted.status().condition == "server_unavailable"
    restarted.close()


def test_unknown_and_unfetched_campaigns_are_statuses_not_exceptions(tmp_path, fake, caplog):
    client = make_client(tmp_path, fake, campaigns=[], max_held=1)
    with caplog.at_level(logging.WARNING, logger="client_sdk"):
        assert client.record("browser", "safari").status is client_sdk.RecordStatus.HELD
        assert client.record("browser", "chrome").status is client_sdk.RecordStatus.SPEC_UNAVAILABLE
        assert client.record("browser", "chrome").status is client_sdk.RecordStatus.SPEC_UNAVAILABLE
    assert fake.spec_fetches == 0  # record() never fetched
    assert caplog.text.count("spec_unavailable") == 1  # logged once
    raw = b"".join(p.read_bytes() for p in (tmp_path / "state").iterdir())
    assert b"safari" in raw  # the held raw value waits in the device's state file (and nowhere else)
    assert client.status().held == 1
    assert client.prepare(["nowhere"]) is False  # one request: browser's spec arrives, nowhere is unknown
    assert fake.spec_fetches == 1 and client.pending() == 1  # the held value was perturbed and queued
    raw = b"".join(p.read_bytes() for p in (tmp_path / "state").iterdir())
    assert b"safari" not in raw.replace(json.dumps(SPEC.to_dict()).encode(), b"")  # overwritten, WAL truncated
    assert client.status().held == 0
    assert client.record("nowhere", 1).status is client_sdk.RecordStatus.UNKNOWN_CAMPAIGN
    assert client.record("browser", "chrome").status is client_sdk.RecordStatus.QUEUED
    fake.spec_status = 503
    assert client.record("browser", "chrome")  # the collector going down changes nothing for recording
    status = client.status()
    assert status.recorded == {"held": 1, "spec_unavailable": 2, "held_queued": 1, "unknown_campaign": 1,
                               "queued": 2}
    assert status.unknown_campaigns == ["nowhere"] and client.pending() == 3
    client.close()


def test_a_fresh_device_can_record_at_once_and_deliver_on_close(tmp_path, fake):
    client = make_client(tmp_path, fake, campaigns=[], background=True, flush_interval=3600)
    assert client.record("browser", "chrome").status in (client_sdk.RecordStatus.HELD,
                                                        client_sdk.RecordStatus.QUEUED)
    assert client.record("ghost", 3).status in (client_sdk.RecordStatus.HELD,
                                                client_sdk.RecordStatus.UNKNOWN_CAMPAIGN)
    result = client.close(timeout=10)
    assert result.remaining == 0 and len(fake.stored) == 1


def test_values_outside_the_domain_raise_before_anything_is_spent(tmp_path, fake):
    client = make_client(tmp_path, fake)
    with pytest.raises(client_sdk.InvalidValue) as raised:
        client.record("browser", "opera")
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, client_sdk.RecordingError)
    assert client.pending() == 0 and client.spent("browser").reports == 0
    client.close()


def test_background_sender_sends_full_batches(tmp_path, fake):
    client = make_client(tmp_path, fake, background=True, batch_size=5, flush_interval=60)
    assert client.prepare(wait=True)
    for _ in range(5):
        client.record("browser", "chrome")
    deadline = time.monotonic() + 5
    while len(fake.stored) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(fake.stored) == 5
    client.close()


def test_constructor_validates_its_arguments(tmp_path, fake):
    with pytest.raises(ValueError, match="url"):
        Client("collector", "k", tmp_path)
    with pytest.raises(ValueError, match="batch_size"):
        make_client(tmp_path, fake, batch_size=0)


def test_rappor_reports_use_the_persistent_device_secret(tmp_path):
    pytest.importorskip("client_sdk.runtime.device_state")
    from client_sdk.runtime.transport import WSGITransport
    from collector import create_app
    from collector.storage import Storage

    db = tmp_path / "collector.db"
    app = create_app({"DATABASE": str(db), "RATE_LIMIT": 0})
    with Storage(db) as storage:
        key, _ = storage.create_key("admin", "2024-01-01")
        storage.create_campaign({"name": "homepage", "mechanism": "rappor",
                                 "rappor": {"k": 16, "h": 2, "m": 4, "f": 0.5, "p": 0.5, "q": 0.75}}, "2024-01-01")
    cohorts = set()
    for _ in range(2):  # the same device restarted: same secret, same cohort
        client = Client("http://collector", key, tmp_path / "device", transport=WSGITransport(app),
                        background=False, policy=ReportPolicy.unlimited(), campaigns=["homepage"])
        client.record("homepage", "example.org")
        assert client.close().sent == 1
    with Storage(db) as storage:
        reports = list(storage.iter_reports("homepage"))
        cohorts = {r["payload"]["cohort"] for r in reports}
    assert len(reports) == 2 and len(cohorts) == 1
