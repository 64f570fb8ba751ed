"""Group commit (SQLite): concurrent report inserts of one process share one transaction and one fsync.

Each test holds the database's writer flock while its requests queue up, so the grouping is certain (no timing):
once the flock is released, the leader takes everything queued into one transaction."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import time
import uuid
from contextlib import contextmanager

import pytest

import client_sdk
import estimators
from collector.storage import (
    DiskFull,
    RateLimited,
    RateRule,
    ReportGroup,
    Storage,
    StorageError,
    StorageUnavailable,
)
from collector.storage.group_commit import _group_commit_queue

DAY = "2024-03-01"
SPEC = {"name": "grr", "mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b", "c"]}


@pytest.fixture
def path(tmp_path):
    return tmp_path / "g.db"


@pytest.fixture
def campaign(path):
    with Storage(path) as storage:
        storage.migrate()
        created, _ = storage.create_campaign(SPEC, DAY)
        storage.insert_reports([group_of(created, 1, seed=0)], DAY)  # its version id exists: no lock needed later
    return created


def group_of(campaign, size, seed):
    mechanism = client_sdk.mechanism_from_spec(campaign.spec, rng=client_sdk.DeterministicRandom(seed))
    payloads = [mechanism.perturb("abc"[i % 3]) for i in range(size)]
    return ReportGroup(campaign, [str(uuid.uuid4()) for _ in payloads], payloads, [],
                       estimators.aggregate(campaign.spec, payloads))


@contextmanager
def writer_lock_held(path):
    "Hold the writer flock that every Storage of ``path`` queues on"
    fd = os.open(f"{path}.writer-lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def run_grouped(path, requests, *, prepare=None):
    """Run each ``(groups, kwargs)`` of ``requests`` in its own thread and Storage while the writer lock is held;
    release it once all are queued.  Each thread's result or exception, in order, and the transactions begun."""
    queue = _group_commit_queue(path)
    before = queue.transactions
    outcomes: list = [None] * len(requests)

    def insert(index, groups, kwargs):
        storage = Storage(path)  # a connection per thread, as the collector's worker threads have
        if prepare is not None:
            prepare(storage)
        try:
            outcomes[index] = storage.insert_reports(groups, DAY, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the outcome under test
            outcomes[index] = exc
        finally:
            storage.close()

    threads = [threading.Thread(target=insert, args=(i, groups, kwargs)) for i, (groups, kwargs) in enumerate(requests)]
    with writer_lock_held(path):
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while len(queue.pending) < len(requests):  # a wait for the queue, not a timing assertion
            assert time.monotonic() < deadline, "the requests never queued"
            time.sleep(0.001)
    for thread in threads:
        thread.join()
    return outcomes, queue.transactions - before


def stored(path):
    with Storage(path) as storage:
        reports = storage.row_count("reports")
        n = sum(row["n"] for row in storage.table_rows("aggregates"))
    return reports, n


def test_concurrent_requests_share_one_commit_each_with_its_own_counts(path, campaign):
    groups = [group_of(campaign, size, seed=size) for size in (1, 2, 3, 4, 5)]
    resent = ReportGroup(campaign, groups[2].report_ids, groups[2].payloads, [], groups[2].aggregate)
    requests = [([group], {}) for group in groups] + [([resent], {})]
    outcomes, transactions = run_grouped(path, requests)
    assert transactions == 1 < len(requests)
    counts = sorted((o.accepted, o.duplicate) for o in outcomes)
    # the original and its resend were in one transaction: whichever ran first stored the three reports
    assert counts == [(0, 3), (1, 0), (2, 0), (3, 0), (4, 0), (5, 0)]
    for outcome, group in zip(outcomes[:5], groups):
        if outcome.duplicate == 0:
            assert outcome.accepted == len(group.report_ids)
    assert stored(path) == (1 + 15, 1 + 15)


def test_each_request_gets_its_own_rate_limit_decision(path, campaign):
    rule = RateRule(rate=0.001, burst=2)
    limited = {"key_hash": "k" * 64, "rate": rule, "now": 1000.0}
    requests = [([group_of(campaign, 2, seed=i)], limited) for i in range(4)]
    requests.append(([group_of(campaign, 3, seed=9)], {"key_hash": "other" * 12, "rate": rule, "now": 1000.0}))
    outcomes, transactions = run_grouped(path, requests)
    assert transactions == 1
    refused = [o for o in outcomes[:4] if isinstance(o, RateLimited)]
    answered = [o.accepted for o in outcomes[:4] if not isinstance(o, Exception)]
    assert len(refused) == 2 and answered == [2, 2]
    assert outcomes[4].accepted == 3  # another key's bucket is its own
    assert stored(path) == (1 + 4 + 3, 1 + 4 + 3)


def test_a_fault_in_the_shared_transaction_fails_all_of_its_requests_and_stores_nothing(path, campaign,
                                                                                         monkeypatch):
    calls = []
    original = Storage._insert_group

    def full_on_the_third(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise sqlite3.OperationalError("database or disk is full")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Storage, "_insert_group", full_on_the_third)
    requests = [([group_of(campaign, 4, seed=i)], {}) for i in range(5)]
    outcomes, transactions = run_grouped(path, requests)
    assert transactions == 1
    assert all(isinstance(o, DiskFull) for o in outcomes)
    assert stored(path) == (1, 1)


class FailingCommit:
    "A connection whose COMMIT fails as a full disk would (the insert statements before it succeed)"

    def __init__(self, conn):
        self._conn = conn

    def execute(self, sql, *args):
        if sql == "COMMIT":
            raise sqlite3.OperationalError("disk I/O error")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def test_a_failed_commit_fails_every_request_in_it(path, campaign):
    def failing(storage):
        storage.conn = FailingCommit(storage.conn)

    requests = [([group_of(campaign, 3, seed=i)], {}) for i in range(4)]
    outcomes, transactions = run_grouped(path, requests, prepare=failing)
    assert transactions == 1
    assert all(isinstance(o, StorageUnavailable) for o in outcomes)
    assert stored(path) == (1, 1)
    with Storage(path) as storage:  # the lock was released and nothing is left half-done: the next insert works
        assert storage.insert_reports([group_of(campaign, 2, seed=7)], DAY).accepted == 2


def test_one_requests_own_error_fails_it_alone_and_the_others_are_stored(path, campaign):
    good = [group_of(campaign, 3, seed=i) for i in range(3)]
    bad = group_of(campaign, 2, seed=5)
    repeated = ReportGroup(campaign, bad.report_ids + bad.report_ids[:1], bad.payloads + bad.payloads[:1])
    requests = [([good[0]], {}), ([repeated], {}), ([good[1]], {}), ([good[2]], {})]
    outcomes, transactions = run_grouped(path, requests)
    assert isinstance(outcomes[1], StorageError) and not isinstance(outcomes[1], StorageUnavailable)
    assert [o.accepted for i, o in enumerate(outcomes) if i != 1] == [3, 3, 3]
    assert transactions == 2  # the shared one, rolled back, then the others again
    assert stored(path) == (1 + 9, 1 + 9)
