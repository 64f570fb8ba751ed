"""Every drop of a queued report or a held value is counted in the transaction that removes it.

Each case fails one half of the pair (the counter's write, or the removal's DELETE through a SQLite trigger that
aborts it) and checks the invariant a crash between them would break: what is still stored plus what is counted is
what there was."""

from __future__ import annotations

import contextlib
import sqlite3
import uuid

import pytest

from client_sdk.runtime.held import HeldValues
from client_sdk.runtime.queue import QueueLimits, ReportQueue
from client_sdk.runtime.state_file import StateFile
from client_sdk.runtime.transport import Response

from .fakes import make_client

N = 5
DAY = 24 * 3600.0


class Injected(sqlite3.OperationalError):
    "The failure the test injects between a removal and its counter"


def fail_counters(state: StateFile, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(name: str, amount: int) -> None:
        raise Injected(f"counter {name} not written")

    monkeypatch.setattr(state, "add_to_counter", refuse)


def fail_deletes(state: StateFile, monkeypatch: pytest.MonkeyPatch) -> None:
    for table in ("queue", "held"):
        state.conn.execute(f"CREATE TEMP TRIGGER refuse_{table} BEFORE DELETE ON main.{table} "
                           "BEGIN SELECT RAISE(ABORT, 'injected: delete refused'); END")


INJECTIONS = {"counter fails": fail_counters, "delete fails": fail_deletes}


def heal(state: StateFile, monkeypatch: pytest.MonkeyPatch) -> None:
    "Take the injected failures away (before a client's close, which flushes again)"
    monkeypatch.undo()
    for table in ("queue", "held"):
        state.conn.execute(f"DROP TRIGGER IF EXISTS temp.refuse_{table}")


def report(campaign: str = "c") -> dict:
    return {"report_id": str(uuid.uuid4()), "campaign": campaign, "fingerprint": "f" * 32, "payload": "00"}


def stored_and_counted(state: StateFile, table: str, counter: str) -> int:
    with state.lock:
        stored = state.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    return stored + state.counters().get(counter, 0)


@pytest.fixture
def state(tmp_path):
    opened = StateFile(tmp_path)
    yield opened
    opened.close()


def attempt(action) -> None:
    "Run a drop with a failure injected: it may raise the injected error or the trigger's abort, nothing else"
    with contextlib.suppress(sqlite3.OperationalError, sqlite3.IntegrityError):
        action()


QUEUE_DROPS = {  # limits, the drop, its counter
    "age": (QueueLimits(max_age_seconds=DAY), lambda queue: queue.drop_expired(now=2 * DAY), "dropped_age_limit"),
    "count": (QueueLimits(max_reports=N), lambda queue: queue.put(report(), now=1.0), "dropped_count_limit"),
}


@pytest.mark.parametrize("inject", INJECTIONS.values(), ids=INJECTIONS.keys())
@pytest.mark.parametrize("limits, drop, counter", QUEUE_DROPS.values(), ids=QUEUE_DROPS.keys())
def test_reports_over_a_queue_limit_are_counted_as_they_leave(state, monkeypatch, inject, limits, drop, counter):
    queue = ReportQueue(state, limits)
    for _ in range(N):
        queue.put(report(), now=0.0)
    inject(state, monkeypatch)
    attempt(lambda: drop(queue))
    assert stored_and_counted(state, "queue", counter) == N  # a put that drops rolls back whole, its report too


@pytest.mark.parametrize("inject", INJECTIONS.values(), ids=INJECTIONS.keys())
def test_held_values_are_counted_as_they_expire_or_are_dropped(state, monkeypatch, inject):
    held = HeldValues(state, max_age_seconds=DAY)
    for _ in range(N):
        held.hold("old", '"x"', now=0.0)
        held.hold("closed", '"x"', now=2 * DAY)
    inject(state, monkeypatch)
    attempt(lambda: held.expire(now=2 * DAY))
    attempt(lambda: held.drop(["closed"], "held_dropped_campaign_closed"))
    with state.lock:
        by_campaign = dict(state.conn.execute("SELECT campaign, count(*) FROM held GROUP BY campaign").fetchall())
    counters = state.counters()
    assert by_campaign.get("old", 0) + counters.get("held_dropped_age", 0) == N
    assert by_campaign.get("closed", 0) + counters.get("held_dropped_campaign_closed", 0) == N


@pytest.mark.parametrize("inject", INJECTIONS.values(), ids=INJECTIONS.keys())
def test_switching_uploads_off_counts_what_it_deletes(tmp_path, fake, monkeypatch, inject):
    client = make_client(tmp_path, fake)
    for _ in range(N):
        client.record("browser", "chrome")
    inject(client.state, monkeypatch)
    attempt(lambda: client.set_upload_enabled(False))
    assert stored_and_counted(client.state, "queue", "deleted_upload_disabled") == N
    heal(client.state, monkeypatch)
    client.close()


@pytest.mark.parametrize("inject", INJECTIONS.values(), ids=INJECTIONS.keys())
def test_reports_the_collector_rejects_are_counted_as_they_leave(tmp_path, fake, monkeypatch, inject):
    "A report rejected for its batch being collected: counted once, when it leaves the queue (else resent)"
    client = make_client(tmp_path, fake)
    for _ in range(N):
        client.record("browser", "chrome")

    ids = client.queue.report_ids()  # one batch: the fake answers it with a rejection of each
    errors = [{"report_id": report_id, "field": "batch", "reason": "batch-collected"} for report_id in ids]
    fake.script = [Response.from_json(200, {"accepted": 0, "duplicate": 0, "rejected": N, "errors": errors})]
    inject(client.state, monkeypatch)
    attempt(lambda: client.flush(timeout=5, retry=False))
    assert stored_and_counted(client.state, "queue", "rejected_batch_collected") == N
    heal(client.state, monkeypatch)
    client.close()
