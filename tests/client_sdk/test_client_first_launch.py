"""A fresh device loses nothing: values recorded before their spec arrives are held in the state file (bounded,
crash-safe, released exactly once), specs shipped with the app make records queue from the first call, and a spec
the collector changed is never used again once the device has heard of the change."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time

import pytest

import client_sdk
from client_sdk import Client, RecordStatus, ReportPolicy
from client_sdk.runtime.held import decode_value, encode_value
from client_sdk.runtime.transport import MockTransport, NetworkError, Response

from .fakes import SPEC, FakeCollector, make_client

HELD, QUEUED = RecordStatus.HELD, RecordStatus.QUEUED
CHANGED = client_sdk.load_spec({"name": "browser", "mechanism": "oue", "epsilon": 2.0,
                                "domain": ["chrome", "firefox", "safari"]})


def offline(request):
    raise NetworkError("connection refused")


def state_bytes(tmp_path) -> bytes:
    return b"".join(p.read_bytes() for p in (tmp_path / "state").iterdir())


def delivered_values(fake: FakeCollector, spec: client_sdk.Spec) -> int:
    return sum(1 for report in fake.stored.values() if report["fingerprint"] == spec.fingerprint)


# -- held values ----------------------------------------------------------------------------------------------
def test_values_held_offline_survive_close_and_a_restart_and_are_delivered(tmp_path, fake, caplog):
    client = make_client(tmp_path, fake, transport=MockTransport(offline), campaigns=[])
    assert [client.record("browser", v).status for v in ("chrome", "safari", "chrome", "firefox")] == [HELD] * 4
    with caplog.at_level(logging.WARNING, logger="client_sdk"):
        client.close(timeout=0)
    assert "dropped" not in caplog.text  # before: "4 values recorded before their spec arrived were dropped"
    assert client.status().held == 4 and client.status().dropped["held_dropped_age"] == 0
    restarted = make_client(tmp_path, fake, campaigns=[])  # fetches the held campaign's spec without being told
    assert restarted.status().held == 0 and restarted.pending() == 4  # released by the constructor's fetch
    result = restarted.flush(timeout=10)
    assert result.sent == 4 and result.remaining == 0 and delivered_values(fake, SPEC) == 4
    status = restarted.status()
    assert status.held == 0 and status.recorded == {"held_queued": 4}
    assert restarted.spent("browser").reports == 4  # charged at release, like a record
    restarted.close()


def test_flush_waits_out_a_rate_limited_listing_and_delivers_the_held_values(tmp_path, fake):
    # a public key shared by many devices: the first listings are refused with 429 and Retry-After
    sleeps: list[float] = []
    answers = [Response.from_json(429, {"detail": "rate limit of this key exceeded"}, {"retry-after": "5"})] * 2

    def limited(request):
        return answers.pop(0) if request.method == "GET" and answers else fake(request)

    client = make_client(tmp_path, fake, transport=MockTransport(limited), sleep=sleeps.append,
                         clock=lambda: 1000.0 + sum(sleeps))
    assert not client.prepare(wait=True)
    assert client.record("browser", "chrome").status == HELD
    once = client.flush(timeout=30, retry=False)  # no retry: the backoff is not waited out, the value stays held
    assert once.sent == 0 and client.status().held == 1 and sleeps == []
    result = client.flush(timeout=30)
    assert result.sent == 1 and result.remaining == 0 and client.status().held == 0
    assert sleeps and min(sleeps) >= 5 and delivered_values(fake, SPEC) == 1
    client.close()


def test_a_held_value_stays_held_when_the_deadline_comes_before_the_retry(tmp_path, fake):
    sleeps: list[float] = []

    def limited(request):
        if request.method == "GET":
            return Response.from_json(429, {"detail": "rate limit"}, {"retry-after": "60"})
        return fake(request)

    client = make_client(tmp_path, fake, transport=MockTransport(limited), sleep=sleeps.append,
                         clock=lambda: 1000.0 + sum(sleeps))
    assert client.record("browser", "chrome").status == HELD
    result = client.flush(timeout=2)
    assert result.sent == 0 and client.status().held == 1 and sleeps == []  # never slept past its deadline
    client.close(timeout=0)


def test_the_ledger_and_policy_are_asked_when_the_held_values_are_released(tmp_path, fake):
    client = make_client(tmp_path, fake, campaigns=[], policy=ReportPolicy())  # one report per day
    assert [client.record("browser", "chrome").status for _ in range(3)] == [HELD] * 3
    assert client.prepare(wait=True)
    assert client.pending() == 1 and client.spent("browser").reports == 1
    assert client.status().recorded == {"held": 3, "held_queued": 1, "held_refused_by_policy": 2}
    assert client.status().held == 0  # a refused value is not kept either
    client.close()


def test_held_values_are_bounded_per_campaign_and_by_age(tmp_path, fake):
    now = [1_700_000_000.0]
    client = make_client(tmp_path, fake, campaigns=[], max_held=2, max_held_age=3600, clock=lambda: now[0])
    assert [client.record("browser", "chrome").status for _ in range(3)] == [HELD, HELD,
                                                                              RecordStatus.SPEC_UNAVAILABLE]
    assert client.record("other", 1).status is HELD  # the bound is per campaign
    now[0] += 3601  # all three values are now too old
    assert client.record("browser", "safari").status is HELD  # holding deletes the expired ones first
    assert client.status().held == 1 and client.status().dropped["held_dropped_age"] == 3
    client.close()
    never = make_client(tmp_path / "never", fake, campaigns=[], max_held=0)
    assert never.record("browser", "chrome").status is RecordStatus.SPEC_UNAVAILABLE  # holding switched off
    assert never.status().held == 0
    never.close()
    with pytest.raises(ValueError, match="max_held"):
        make_client(tmp_path / "bad", fake, max_held=-1)


def test_a_held_value_the_spec_rejects_is_dropped_with_a_named_reason(tmp_path, fake, caplog):
    client = make_client(tmp_path, fake, campaigns=[])
    assert client.record("browser", "opera").status is HELD  # no domain to check it against yet
    assert client.record("browser", "chrome").status is HELD
    with caplog.at_level(logging.WARNING, logger="client_sdk"):
        client.prepare(wait=True)
    assert "a held value was invalid" in caplog.text
    status = client.status()
    assert status.dropped["held_dropped_invalid"] == 1 and status.recorded["held_dropped_invalid"] == 1
    assert status.held == 0 and client.pending() == 1 and client.spent("browser").reports == 1
    client.close()


def test_values_no_campaign_can_report_raise_at_once_even_without_a_spec(tmp_path, fake):
    client = make_client(tmp_path, fake, campaigns=[])
    with pytest.raises(client_sdk.InvalidValueType):
        client.record("browser", None)
    with pytest.raises(client_sdk.InvalidValueType):
        client.record("browser", {"a": 1})
    with pytest.raises(client_sdk.InvalidValue):
        client.record("browser", float("nan"))
    assert client.status().held == 0
    client.close()


def test_held_values_keep_their_type_in_the_state_file():
    for value in ("chrome", 3, 2.5, True, [1, 2], {"maps", "mail"}, ("a", 1), {("a", 1), 2}):
        restored = decode_value(encode_value(value))
        expected = list(value) if isinstance(value, tuple) else value
        assert restored == expected and type(restored) is type(expected), value
    with pytest.raises(client_sdk.InvalidValue):  # a damaged row is an invalid value (dropped, counted), no crash
        decode_value('{"set": ')


def test_held_values_of_unknown_or_closed_campaigns_are_dropped_and_counted(tmp_path, fake):
    client = make_client(tmp_path, fake, campaigns=[])
    assert client.record("ghost", 1).status is HELD
    assert client.record("browser", "chrome").status is HELD
    fake.extra_campaigns = []
    original = fake.__call__

    def closed_browser(request):
        response = original(request)
        if request.method == "GET":
            body = response.json()
            body["campaigns"][0]["closed"] = True
            return Response.from_json(200, body)
        return response

    client.transport = MockTransport(closed_browser)
    client.prepare(wait=True)
    status = client.status()
    assert status.held == 0 and client.pending() == 0
    assert status.dropped["held_dropped_unknown_campaign"] == 1
    assert status.dropped["held_dropped_campaign_closed"] == 1
    client.close()


def test_switching_upload_off_deletes_the_held_raw_values(tmp_path, fake):
    client = make_client(tmp_path, fake, campaigns=[])
    assert client.record("browser", "value-to-forget").status is HELD
    assert b"value-to-forget" in state_bytes(tmp_path)
    client.set_upload_enabled(False)
    assert client.status().held == 0 and client.status().dropped["held_dropped_upload_disabled"] == 1
    client.close()
    assert b"value-to-forget" not in state_bytes(tmp_path)  # overwritten, not left in a free page or the WAL


def test_a_release_that_cannot_be_written_keeps_every_held_value(tmp_path, fake, monkeypatch):
    "The release of a batch is one transaction: a failed write queues nothing, charges nothing, keeps them all"
    client = make_client(tmp_path, fake, campaigns=[])
    for value in ("chrome", "safari", "firefox"):
        assert client.record("browser", value).status is HELD
    puts = []
    real_put = client.queue.put

    def failing_put(report, now):
        puts.append(report)
        if len(puts) == 2:
            raise sqlite3.OperationalError("disk I/O error")
        return real_put(report, now)

    monkeypatch.setattr(client.queue, "put", failing_put)
    client.prepare(wait=True)
    assert client.pending() == 0 and client.spent("browser").reports == 0 and client.status().held == 3
    monkeypatch.setattr(client.held, "oldest", lambda *a: (_ for _ in ()).throw(sqlite3.OperationalError("I/O")))
    assert client.flush(timeout=1).remaining == 0  # a failing state file is logged, never raised by flush()
    assert client.status().held == 3
    monkeypatch.undo()
    client.prepare(wait=True)
    assert client.pending() == 3 and client.spent("browser").reports == 3 and client.status().held == 0
    client.close()


def test_two_clients_on_one_directory_release_each_held_value_once(tmp_path, fake):
    "The attacker's race: both see the held values, both release at once; each value must be queued once"
    first = make_client(tmp_path, fake, campaigns=[], transport=MockTransport(offline))
    for i in range(150):
        assert first.record("browser", ("chrome", "safari", "firefox")[i % 3]).status is HELD
    second = make_client(tmp_path, fake, campaigns=[], transport=MockTransport(offline))  # sees them, cannot fetch
    assert second.status().held == 150
    first.transport = second.transport = MockTransport(fake)
    threads = [threading.Thread(target=c.prepare, kwargs={"wait": True}) for c in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert first.pending() == 150 and first.spent("browser").reports == 150 and first.status().held == 0
    first.close()
    second.close()


# -- specs shipped with the app ---------------------------------------------------------------------------------
def test_shipped_specs_queue_from_the_first_call_with_no_network_at_all(tmp_path, fake):
    transport = MockTransport(offline)
    client = make_client(tmp_path, fake, transport=transport, campaigns=[], background=True,
                         specs=[SPEC.to_dict()])
    assert [client.record("browser", "chrome").status for _ in range(150)] == [QUEUED] * 150
    client.close(timeout=0)
    assert all(r.method == "GET" for r in transport.requests)  # it tried to learn of a newer spec, nothing else
    restarted = make_client(tmp_path, fake, specs=[SPEC.to_dict()])
    assert restarted.flush(timeout=10).sent == 150 and delivered_values(fake, SPEC) == 150
    restarted.close()


def test_a_spec_file_is_checked_like_a_fetched_spec(tmp_path, fake):
    listing = fake(client_sdk.runtime.transport.Request("GET", "http://collector.test/v1/campaigns", {})).body
    (tmp_path / "campaigns.json").write_bytes(listing)  # the collector's own listing, saved at build time
    client = make_client(tmp_path, fake, transport=MockTransport(offline), specs=tmp_path / "campaigns.json")
    assert client.record("browser", "chrome").status is QUEUED
    client.close()
    tampered = {**json.loads(listing)["campaigns"][0], "fingerprint": "0" * 32}
    with pytest.raises(client_sdk.SpecError) as raised:
        make_client(tmp_path / "b", fake, specs=[tampered])
    assert raised.value.field == "specs[0].fingerprint"
    altered = {**SPEC.to_dict(), "epsilon": 5.0}  # the fingerprint it carries is the old parameters'
    with pytest.raises(client_sdk.SpecError, match=r"specs\[1\]\.fingerprint"):
        make_client(tmp_path / "c", fake, specs=[CHANGED, altered])
    with pytest.raises(client_sdk.SpecError, match=r"specs\[0\]\.epsilon"):
        make_client(tmp_path / "d", fake, specs=[{"name": "x", "mechanism": "grr", "epsilon": -1, "domain": [1, 2]}])
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(client_sdk.SpecError, match="specs"):
        make_client(tmp_path / "e", fake, specs=str(tmp_path / "broken.json"))
    with pytest.raises(client_sdk.SpecError, match="cannot read"):
        make_client(tmp_path / "f", fake, specs=tmp_path / "missing.json")
    assert not (tmp_path / "b").exists()  # a bad spec raises before the state directory is made


def test_a_changed_spec_on_the_collector_replaces_the_shipped_one_for_good(tmp_path, fake, caplog):
    "The app shipped SPEC; the collector now serves CHANGED: once heard of, the old parameters are never used"
    client = make_client(tmp_path, fake, transport=MockTransport(offline), campaigns=[], specs=[SPEC])
    assert client.record("browser", "chrome").status is QUEUED  # offline: the shipped spec is all there is
    fake_changed = FakeCollector()
    fake_changed.extra_campaigns = []
    serve_changed = _serving(fake_changed, CHANGED)
    client.transport = MockTransport(serve_changed)
    with caplog.at_level(logging.WARNING, logger="client_sdk"):
        client.prepare(wait=True)
    assert "replaces the one shipped with the app" in caplog.text
    assert client.record("browser", "chrome").status is QUEUED
    client.close(timeout=0)
    restarted = make_client(tmp_path, fake, transport=MockTransport(offline), campaigns=[], specs=[SPEC])
    assert restarted.record("browser", "safari").status is QUEUED  # offline after a restart: still the new one
    restarted.flush(timeout=5)
    restarted.transport = MockTransport(serve_changed)
    restarted.flush(timeout=10)
    fingerprints = [r["fingerprint"] for r in fake_changed.stored.values()]
    assert fingerprints.count(SPEC.fingerprint) == 1  # only the report made before the device knew
    assert fingerprints.count(CHANGED.fingerprint) == 2
    restarted.close()


def _serving(fake: FakeCollector, spec: client_sdk.Spec):
    "A fake collector whose campaign browser is ``spec``"
    def handler(request):
        if request.method == "GET":
            item = {"name": spec.name, "version": 2, "fingerprint": spec.fingerprint, "spec": spec.to_dict()}
            return Response.from_json(200, {"campaigns": [item]})
        return fake(request)
    return handler


def test_a_campaign_the_collector_does_not_list_is_not_recorded_from_a_shipped_spec(tmp_path, fake):
    ghost = client_sdk.load_spec({"name": "ghost", "mechanism": "grr", "epsilon": 1.0, "domain": [1, 2]})
    client = make_client(tmp_path, fake, campaigns=[], specs=[ghost])
    assert client.record("ghost", 1).status is RecordStatus.UNKNOWN_CAMPAIGN  # the listing says it is not there
    assert client.prepare() is False
    client.close()


# -- flush and close --------------------------------------------------------------------------------------------
def test_flush_says_what_the_background_sender_delivered(tmp_path, fake):
    client = make_client(tmp_path, fake, background=True, batch_size=1, flush_interval=3600, specs=[SPEC])
    for _ in range(4):
        assert client.record("browser", "chrome")
    deadline = time.monotonic() + 60
    while len(fake.stored) < 4 and time.monotonic() < deadline:  # each record is a full batch: it wakes the sender
        time.sleep(0.05)
    assert len(fake.stored) == 4
    result = client.flush(timeout=10)
    assert (result.sent, result.background_sent, result.delivered, result.remaining) == (0, 4, 4, 0)
    assert client.flush(timeout=10).delivered == 0  # counted once
    client.close()


def test_status_after_close_is_the_last_status(tmp_path, fake):
    client = make_client(tmp_path, fake, transport=MockTransport(offline), campaigns=[], specs=[SPEC])
    client.record("browser", "chrome")
    client.record("load_ms", 3.5)  # held
    client.close(timeout=0)
    status = client.status()  # was sqlite3.ProgrammingError: Cannot operate on a closed database
    assert (status.pending, status.held, status.recorded) == (1, 1, {"queued": 1, "held": 1})
    assert client.pending() == 1 and client.flush().remaining == 1
    with pytest.raises(client_sdk.ClientClosed) as raised:
        client.spent("browser")
    assert isinstance(raised.value, client_sdk.LDPError)
    with pytest.raises(client_sdk.ClientClosed):
        client.set_upload_enabled(False)
    other = make_client(tmp_path / "other", fake)
    other.record("browser", "chrome")
    other.delete_local_data()
    assert other.status().pending == 0 and other.status().recorded == {"queued": 1}


def test_a_client_without_specs_argument_behaves_as_before(tmp_path, fake):
    client = Client("http://collector.test", "key", tmp_path / "s", transport=MockTransport(fake), background=False)
    assert client.record("browser", "chrome").status is HELD
    client.close(timeout=10)
    assert len(fake.stored) == 1


def test_a_held_raw_value_never_leaves_the_device_and_is_gone_once_released(tmp_path):
    "The collector's view (every request body) and the disk's, after release: the raw value is in neither"
    numeric = client_sdk.load_spec({"name": "load_ms", "mechanism": "piecewise", "epsilon": 1.0,
                                    "range": [0, 1000]})
    seen: list[bytes] = []
    fake = FakeCollector()
    fake.extra_campaigns = [{"name": "load_ms", "version": 1, "fingerprint": numeric.fingerprint,
                             "spec": numeric.to_dict()}]

    def watching(request):
        seen.append(request.body or b"")
        return fake(request)

    client = make_client(tmp_path, fake, transport=MockTransport(offline), campaigns=[])
    assert client.record("load_ms", 123.456789).status is HELD
    client.close(timeout=0)
    assert b"123.456789" in state_bytes(tmp_path)  # on the device, in its state file only
    restarted = make_client(tmp_path, fake, transport=MockTransport(watching), campaigns=[])
    assert restarted.flush(timeout=10).sent == 1
    restarted.close()
    assert seen and not any(b"123.456789" in body for body in seen)
    assert b"123.456789" not in state_bytes(tmp_path)


def test_a_state_file_of_the_previous_version_gains_the_held_table(tmp_path, fake):
    client = make_client(tmp_path, fake)
    assert client.record("browser", "chrome")
    client.close(timeout=0)
    with sqlite3.connect(tmp_path / "state" / "ldp-telemetry.sqlite3") as conn:  # as SDK version 3 left it
        conn.execute("DROP TABLE held")
        conn.execute("PRAGMA user_version = 3")
    conn.close()
    again = make_client(tmp_path, fake, transport=MockTransport(offline), campaigns=[])
    assert again.pending() == 1 and again.record("elsewhere", 1).status is HELD
    again.close(timeout=0)
