"""The persistent report queue: order, persistence, and limits on count, bytes and age."""

from __future__ import annotations

import sqlite3
import uuid

import pytest

from client_sdk.runtime.queue import QueueLimits, ReportQueue
from client_sdk.runtime.state_file import StateFile


def report(payload: object = "00") -> dict:
    return {"report_id": str(uuid.uuid4()), "campaign": "c", "fingerprint": "f" * 32, "payload": payload}


@pytest.fixture
def state(tmp_path):
    opened = StateFile(tmp_path)
    yield opened
    opened.close()


def test_fifo_and_persistence(tmp_path, state):
    queue = ReportQueue(state)
    reports = [report() for _ in range(5)]
    for i, item in enumerate(reports):
        queue.put(item, now=float(i))
    assert [r.report_id for r in queue.peek(3, 10_000)] == [r["report_id"] for r in reports[:3]]
    queue.remove([reports[0]["report_id"]])
    state.close()
    reopened = ReportQueue(StateFile(tmp_path))
    assert reopened.report_ids() == [r["report_id"] for r in reports[1:]]
    reopened.state.close()


def test_peek_respects_bytes_but_returns_at_least_one(state):
    queue = ReportQueue(state)
    for _ in range(10):
        queue.put(report("ab" * 100), now=0.0)
    size = queue.total_bytes() // 10
    assert len(queue.peek(10, 3 * size + 3)) == 3
    assert len(queue.peek(10, 1)) == 1


def test_count_limit_drops_the_oldest(state):
    queue = ReportQueue(state, QueueLimits(max_reports=3))
    reports = [report() for _ in range(5)]
    dropped = sum(queue.put(item, now=0.0) for item in reports)
    assert dropped == 2
    assert queue.report_ids() == [r["report_id"] for r in reports[2:]]


def test_byte_limit_drops_the_oldest(state):
    queue = ReportQueue(state, QueueLimits(max_bytes=2048))
    for _ in range(20):
        queue.put(report("ab" * 100), now=0.0)
    assert queue.total_bytes() <= 2048
    assert 0 < len(queue) < 20


def test_age_limit_drops_expired_reports(state):
    queue = ReportQueue(state, QueueLimits(max_age_seconds=60))
    old = report()
    queue.put(old, now=0.0)
    fresh = report()
    queue.put(fresh, now=100.0)
    assert queue.report_ids() == [fresh["report_id"]]


def test_the_same_report_id_cannot_be_queued_twice(state):
    queue = ReportQueue(state)
    item = report()
    queue.put(item, now=0.0)
    with pytest.raises(sqlite3.IntegrityError):
        queue.put(item, now=0.0)
    assert len(queue) == 1


def test_limits_are_validated():
    with pytest.raises(ValueError, match="max_reports"):
        QueueLimits(max_reports=0)
    with pytest.raises(ValueError, match="max_bytes"):
        QueueLimits(max_bytes=10)
    with pytest.raises(ValueError, match="max_age"):
        QueueLimits(max_age_seconds=0)


def test_limit_drops_are_counted_by_reason(state):
    queue = ReportQueue(state, QueueLimits(max_reports=2, max_age_seconds=60))
    for now in (0.0, 1.0, 2.0, 100.0):
        queue.put(report(), now=now)
    assert state.counters() == {"dropped_count_limit": 1, "dropped_age_limit": 2}


def test_an_old_state_file_gets_the_running_totals(tmp_path):
    conn = sqlite3.connect(tmp_path / "ldp-telemetry.sqlite3")
    conn.execute("CREATE TABLE queue (seq INTEGER PRIMARY KEY AUTOINCREMENT, report_id TEXT NOT NULL UNIQUE, "
                 "campaign TEXT NOT NULL, body TEXT NOT NULL, size INTEGER NOT NULL, created REAL NOT NULL)")
    conn.executemany("INSERT INTO queue (report_id, campaign, body, size, created) VALUES (?, 'c', '{}', 2, 0)",
                     [(str(uuid.uuid4()),) for _ in range(3)])
    conn.commit()
    conn.close()
    state = StateFile(tmp_path)
    assert ReportQueue(state).totals() == (3, 6)
    state.close()
