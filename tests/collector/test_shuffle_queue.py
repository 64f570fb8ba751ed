"""The shuffler's queue and forwarding rounds on both backends (SQLite and PostgreSQL), against a fake collector:
every acknowledged report is forwarded exactly once in whole batches of ``shuffle_batch``, a failed request leaves
its batch to be resent under the same id, and a batch refused past its budget is discarded."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

import client_sdk
from collector.shuffler.forwarder import forward_round
from collector.shuffler.queue import ShuffleQueue
from collector.shuffler.upstream import BudgetSpent, UpstreamError

from .helpers import on_both_backends
from .shuffler_helpers import SHUFFLED

pytestmark = on_both_backends
SPEC = client_sdk.Spec.from_dict(SHUFFLED)  # batches of 100


class FakeCollector:
    "The upstream collector: it knows SPEC, acknowledges each batch (a resent id adds nothing), fails on request"

    def __init__(self, fail: set[int] | None = None, refuse: set[int] | None = None) -> None:
        self.fail, self.refuse = fail or set(), refuse or set()
        self.calls = 0
        self.batches: dict[str, list[str]] = {}

    def spec(self, name: str, fingerprint: str) -> client_sdk.Spec | None:
        return SPEC if (name, fingerprint) == (SPEC.name, SPEC.fingerprint) else None

    def forward(self, batch_id: str, reports_json: str) -> dict:
        reports = json.loads(reports_json)
        self.calls += 1
        if self.calls in self.fail:
            raise UpstreamError("collector unreachable: test")
        if self.calls in self.refuse:
            raise BudgetSpent("budget-exhausted")
        self.batches.setdefault(batch_id, [r["report_id"] for r in reports])
        return {"accepted": len(reports), "duplicate": 0, "rejected": 0, "errors": []}


def _queued(storage: Any, count: int) -> list[str]:
    ids = [str(uuid.uuid4()) for _ in range(count)]
    accepted, duplicate = ShuffleQueue(storage).enqueue(
        [(report_id, SPEC.name, SPEC.fingerprint, {"value": i % 3}) for i, report_id in enumerate(ids)], 1000.0)
    assert (accepted, duplicate) == (count, 0)
    return ids


def test_whole_batches_are_forwarded_once_and_the_rest_waits(storage):
    queue = ShuffleQueue(storage)
    ids = _queued(storage, 450)
    assert queue.enqueue([(ids[0], SPEC.name, SPEC.fingerprint, {"value": 0})], 1001.0) == (0, 1)
    upstream = FakeCollector()
    assert forward_round(queue, upstream, 1002.0) == 400  # type: ignore[arg-type]
    assert [len(batch) for batch in upstream.batches.values()] == [100] * 4
    forwarded = [report_id for batch in upstream.batches.values() for report_id in batch]
    assert len(set(forwarded)) == 400 and set(forwarded) <= set(ids)
    assert queue.count() == 50 and queue.batches() == []
    waiting = queue.waiting()
    assert [(w.queued, w.opened) for w in waiting] == [(50, 1002.0)]  # its time limit starts at the last batch


def test_a_failed_request_leaves_its_batch_to_be_resent_under_the_same_id(storage):
    queue = ShuffleQueue(storage)
    ids = _queued(storage, 300)
    upstream = FakeCollector(fail={2})
    with pytest.raises(UpstreamError):
        forward_round(queue, upstream, 1002.0, pipeline=1)  # type: ignore[arg-type]
    kept = queue.batches()
    assert len(upstream.batches) == 1 and len(kept) == 1 and queue.count() == 200
    assert forward_round(queue, upstream, 1003.0) == 200  # type: ignore[arg-type]
    assert kept[0] in upstream.batches  # the batch formed before the failure, sent again as it was
    forwarded = sorted(report_id for batch in upstream.batches.values() for report_id in batch)
    assert forwarded == sorted(ids) and queue.count() == 0  # each report exactly once


def test_a_batch_refused_past_the_budget_is_discarded(storage):
    queue = ShuffleQueue(storage)
    _queued(storage, 200)
    upstream = FakeCollector(refuse={1})
    assert forward_round(queue, upstream, 1002.0, pipeline=1) == 100  # type: ignore[arg-type]
    assert len(upstream.batches) == 1 and queue.count() == 0 and queue.batches() == []


def test_forming_a_batch_moves_its_reports_out_of_the_queue(storage):
    """A formed batch is one row holding its reports (those queued rows deleted), in an order drawn at forming; a
    device's resend of one of them after that is queued again (the collector stores each report id once)"""
    queue = ShuffleQueue(storage)
    ids = _queued(storage, 150)
    batch_id = queue.form_batch(SPEC.name, SPEC.fingerprint, 100, 1002.0)
    assert batch_id is not None and queue.batches() == [batch_id]
    batch = queue.batch(batch_id)
    members = [r["report_id"] for r in batch.reports]
    assert batch.size == 100 and len(set(members)) == 100 and set(members) <= set(ids)
    assert int(storage._one("SELECT COUNT(*) FROM shuffle_queue")[0]) == 50 and queue.count() == 150
    assert queue.batch(batch_id).reports_json == batch.reports_json  # sent again as it was formed
    assert queue.enqueue([(members[0], SPEC.name, SPEC.fingerprint, {"value": 0})], 1003.0) == (1, 0)
    queue.delete_batch(batch_id)
    assert queue.batches() == [] and queue.count() == 51
