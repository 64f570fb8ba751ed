"""The persistent report queue: order, persistence, and limits on count, bytes and age."""

from __future__ import annotations

import re
import sqlite3
import time
import uuid

import pytest

from client_sdk.queue import QueueLimits, ReportQueue
from client_sdk.state_file import StateFile
from tests.sqltrace import traced_connections


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


def _fill(state: StateFile, n: int, created: float = 0.0) -> None:
    with state.transaction() as conn:
        conn.executemany("INSERT INTO queue (report_id, campaign, body, size, created) VALUES (?, 'c', '{}', 2, ?)",
                         [(str(uuid.uuid4()), created + i) for i in range(n)])


def _shape(statement: str) -> str:
    return re.sub(r"'[^']*'|\b\d+(\.\d+)?\b", "?", statement)


def _statements_per_put(state: StateFile, queue: ReportQueue) -> list[str]:
    statements: list[str] = []
    state.conn.set_trace_callback(lambda s: statements.append(_shape(s)))
    queue.put(report(), now=1e6)
    state.conn.set_trace_callback(None)
    return statements


def test_put_costs_the_same_statements_at_any_queue_depth(tmp_path):
    shallow, deep = StateFile(tmp_path / "a"), StateFile(tmp_path / "b")
    _fill(shallow, 10)
    _fill(deep, 20_000)
    limits = QueueLimits(max_reports=100_000, max_age_seconds=1e9)
    assert len(ReportQueue(deep, limits)) == 20_000
    few = _statements_per_put(shallow, ReportQueue(shallow, limits))
    many = _statements_per_put(deep, ReportQueue(deep, limits))
    assert few == many and len(few) <= 8
    assert not any("count(" in s or "sum(" in s for s in many)  # running totals, no scans
    plan = " ".join(str(row) for row in deep.conn.execute("EXPLAIN QUERY PLAN DELETE FROM queue WHERE created < 1"))
    assert "queue_created" in plan  # the age limit is an index range, not a scan
    shallow.close()
    deep.close()


def test_a_full_queue_drops_one_per_put_at_constant_cost(tmp_path):
    state = StateFile(tmp_path)
    _fill(state, 5_000)
    queue = ReportQueue(state, QueueLimits(max_reports=5_000, max_age_seconds=1e9))
    first, second = _statements_per_put(state, queue), _statements_per_put(state, queue)
    assert len(first) == len(second) and len(queue) == 5_000
    assert state.counters()["dropped_count_limit"] == 2
    state.close()


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


def test_the_schema_is_created_in_one_transaction_and_checked_with_one_read(tmp_path, monkeypatch):
    "Without a template (Python 3.10) SQLite makes a new file's schema in one transaction"
    import client_sdk.state_file as state_file

    monkeypatch.setattr(state_file, "_TEMPLATE", [None])
    StateFile(tmp_path).close()
    with traced_connections() as statements:
        StateFile(tmp_path).close()
        reopened = list(statements)
        statements.clear()
        StateFile(tmp_path / "fresh").close()
    assert not any("CREATE" in s for s in reopened) and len(reopened) <= 3
    statements = [s.rstrip(";") for s in statements]  # a new file's schema is one script
    assert statements.count("BEGIN IMMEDIATE") == 1 and statements.count("COMMIT") == 1
    assert statements.index("BEGIN IMMEDIATE") < min(i for i, s in enumerate(statements) if "CREATE" in s)


def test_record_costs_the_same_statements_at_any_queue_depth(tmp_path):
    from .test_client import FakeCollector, make_client

    counts = []
    for depth, name in ((10, "a"), (20_000, "b")):
        client = make_client(tmp_path / name, FakeCollector(), queue_limits=QueueLimits(max_reports=100_000))
        client.record("browser", "chrome")
        _fill(client.state, depth, created=time.time())
        statements: list[str] = []
        client.state.conn.set_trace_callback(lambda s, out=statements: out.append(_shape(s)))
        assert client.record("browser", "chrome")
        client.state.conn.set_trace_callback(None)
        counts.append(statements)
        client.close(timeout=0)
    assert counts[0] == counts[1] and len(counts[0]) <= 12
