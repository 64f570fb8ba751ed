"""What the device's report queue costs per put and per record: the same few statements at any queue depth (running
totals and index ranges, no scans), and a new file's schema in one transaction.  The queue's behaviour (limits, drops,
order) is tests/client_sdk/test_queue.py."""

from __future__ import annotations

import re
import time
import uuid

import pytest

from client_sdk.runtime.queue import QueueLimits, ReportQueue
from client_sdk.runtime.state_file import StateFile
from tests.client_sdk.test_queue import report
from tests.sqltrace import traced_connections

pytestmark = pytest.mark.budget


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


def test_the_schema_is_created_in_one_transaction_and_checked_with_one_read(tmp_path, monkeypatch):
    "Without a template (Python 3.10) SQLite makes a new file's schema in one transaction"
    import client_sdk.runtime.state_file as state_file

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
    from tests.client_sdk.fakes import FakeCollector, make_client

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
