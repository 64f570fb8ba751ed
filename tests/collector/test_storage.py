"""The storage module: durability settings, transactions, rebuilt aggregates equal incremental ones."""

from __future__ import annotations

import random
import uuid

import pytest

import client_sdk
import estimators
from collector.storage import RateLimited, RateRule, ReportGroup, payload_text

from .helpers import on_both_backends

SPECS = [
    {"name": "grr", "mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b", "c"]},
    {"name": "oue", "mechanism": "oue", "epsilon": 1.0, "domain": list(range(20))},
    {"name": "olh", "mechanism": "olh", "epsilon": 2.0, "domain": list(range(30))},
    {"name": "hadamard", "mechanism": "hadamard", "epsilon": 1.0, "domain": list(range(10))},
    {"name": "laplace", "mechanism": "laplace", "epsilon": 1.0, "range": [0, 10]},
    {"name": "duchi", "mechanism": "duchi", "epsilon": 1.0, "range": [0, 10]},
    {"name": "piecewise", "mechanism": "piecewise", "epsilon": 1.0, "range": [0, 10]},
    {"name": "hybrid", "mechanism": "hybrid", "epsilon": 2.0, "range": [0, 10]},
]


def group_of(campaign, values, seed):
    mechanism = client_sdk.mechanism_from_spec(campaign.spec, rng=client_sdk.DeterministicRandom(seed))
    payloads = [mechanism.perturb(v) for v in values]
    return ReportGroup(campaign, [str(uuid.uuid4()) for _ in payloads], payloads,
                       [payload_text(p) for p in payloads], estimators.aggregate(campaign.spec, payloads))


def test_durability_pragmas(storage):
    assert storage.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert storage.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert storage.conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    assert storage.conn.execute("PRAGMA mmap_size").fetchone()[0] >= 1 << 30  # reads of old days' pages: no copy


@on_both_backends
@pytest.mark.parametrize("spec", SPECS, ids=[s["name"] for s in SPECS])
def test_rebuilt_aggregates_equal_incremental_ones(storage, spec):
    campaign, _ = storage.create_campaign(spec, "2024-01-01")
    rng = random.Random(3)
    domain = campaign.spec.domain
    for batch, day in enumerate(["2024-01-01", "2024-01-01", "2024-01-02"]):
        values = [rng.choice(domain) if domain else rng.uniform(0, 10) for _ in range(200)]
        group = group_of(campaign, values, seed=batch)
        storage.insert_reports([group], day)
        if batch == 1:  # a resent batch: every report is a duplicate
            assert storage.insert_reports([group], day).duplicate == 200
    incremental = storage.aggregates_by_day(campaign)
    assert storage.rebuild_aggregates(campaign.name) == 2
    rebuilt = storage.aggregates_by_day(campaign)
    assert [day for day, _ in rebuilt] == ["2024-01-01", "2024-01-02"]
    assert incremental == rebuilt
    assert storage.read_aggregate(campaign).n == 600


@on_both_backends
def test_a_failed_transaction_leaves_nothing(storage):
    campaign, _ = storage.create_campaign(SPECS[0], "2024-01-01")
    group = group_of(campaign, ["a"] * 10, seed=1)
    group.aggregate = None
    group.payloads[3] = "not a payload"  # the aggregate computation fails inside the transaction
    with pytest.raises(ValueError):
        storage.insert_reports([group], "2024-01-01")
    assert storage.count_reports() == 0
    assert storage.table_rows("aggregates") == []


@on_both_backends
def test_rate_token_is_taken_with_the_insert(storage):
    campaign, _ = storage.create_campaign(SPECS[0], "2024-01-01")
    rule = RateRule(rate=1.0, burst=1.0)
    storage.insert_reports([group_of(campaign, ["a"], 1)], "2024-01-01", key_hash="k", rate=rule, now=100.0)
    with pytest.raises(RateLimited) as limited:
        storage.insert_reports([group_of(campaign, ["a"], 2)], "2024-01-01", key_hash="k", rate=rule, now=100.2)
    assert limited.value.retry_after == pytest.approx(9.8)  # tokens come in 10-second steps (RateRule)
    assert storage.count_reports() == 1
    assert storage.peek_tokens("k", rule, 110.0) == 0


@on_both_backends
def test_campaign_versions_are_immutable(storage):
    first, created = storage.create_campaign(SPECS[0], "2024-01-01")
    assert created and first.version == 1
    same, created = storage.create_campaign(SPECS[0], "2024-01-02")
    assert not created and same == first
    second, created = storage.create_campaign({**SPECS[0], "epsilon": 2.0}, "2024-01-02")
    assert created and second.version == 2
    assert storage.get_campaign("grr", 1).spec.epsilon == 1.0
    assert [c.version for c in storage.campaign_versions("grr")] == [1, 2]
    assert storage.find_version("grr", first.fingerprint) == first


def _checkpoints_of(storage, monkeypatch, requests: list[list[int]]) -> list[str]:
    """The checkpoint statements run while ``requests`` (each a list of value indices, one report each) are
    inserted one request at a time, with CHECKPOINT_REQUESTS = 16 and fresh counters"""
    from collector.storage import sqlite as storage_module

    monkeypatch.setattr(storage_module, "CHECKPOINT_REQUESTS", 16)
    monkeypatch.setattr(storage_module, "_inserted_since_checkpoint", {})
    monkeypatch.setattr(storage_module, "_requests_since_checkpoint", {})
    campaign, _ = storage.create_campaign(SPECS[1], "2024-01-01")
    checkpoints: list[str] = []
    storage.conn.set_trace_callback(lambda statement: checkpoints.append(statement) if "wal_checkpoint" in
                                    statement else None)
    try:
        for seed, values in enumerate(requests):
            storage.insert_reports([group_of(campaign, values, seed)], "2024-01-01")
    finally:
        storage.conn.set_trace_callback(None)
    return checkpoints


def test_small_commits_checkpoint_by_request_count_so_the_wal_stays_bounded(storage, monkeypatch):
    """One-report requests checkpoint every CHECKPOINT_REQUESTS requests (not only every CHECKPOINT_REPORTS
    reports): the WAL file stops growing at about CHECKPOINT_REQUESTS commits' pages, and stays readable"""
    checkpoints = _checkpoints_of(storage, monkeypatch, [[seed % 20] for seed in range(160)])
    assert len(checkpoints) == 10  # after every 16th request, whatever its size
    page_size = storage.conn.execute("PRAGMA page_size").fetchone()[0]
    wal_bytes = (storage.path.parent / (storage.path.name + "-wal")).stat().st_size
    # 16 one-report commits write about 50 frames; the 160 without a checkpoint wrote about 480
    assert wal_bytes <= 16 * 6 * (page_size + 24) + 32, wal_bytes
    assert storage.count_reports() == 160


def test_large_batches_still_checkpoint_by_reports_not_by_requests(storage, monkeypatch):
    "A batch of many reports counts as one request: CHECKPOINT_REPORTS, not the request count, decides"
    from collector.storage import sqlite as storage_module

    monkeypatch.setattr(storage_module, "CHECKPOINT_REPORTS", 1000)
    checkpoints = _checkpoints_of(storage, monkeypatch, [list(range(20)) * 15] * 4)  # 300 reports each
    assert len(checkpoints) == 1  # at 1,200 reports; 4 requests are far from 16


def test_the_wal_is_checkpointed_after_the_writer_lock_is_released(storage, monkeypatch):
    "The checkpoint's writes and fsync do not hold up the next writer: it runs once the writer flock is free"
    import fcntl
    import os

    from collector.storage import sqlite as storage_module

    monkeypatch.setattr(storage_module, "CHECKPOINT_REPORTS", 300)
    monkeypatch.setattr(storage_module, "_inserted_since_checkpoint", {})
    monkeypatch.setattr(storage_module, "_requests_since_checkpoint", {})
    campaign, _ = storage.create_campaign(SPECS[1], "2024-01-01")
    other = os.open(f"{storage.path}.writer-lock", os.O_RDWR)
    lock_free: list[bool] = []

    def trace(statement: str) -> None:
        if "wal_checkpoint" in statement:
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock_free.append(False)
            else:
                fcntl.flock(other, fcntl.LOCK_UN)
                lock_free.append(True)

    storage.conn.set_trace_callback(trace)
    try:
        for seed in range(6):
            storage.insert_reports([group_of(campaign, list(range(10)) * 20, seed)], "2024-01-01")
    finally:
        storage.conn.set_trace_callback(None)
        os.close(other)
    assert lock_free == [True, True, True]  # after 400, 800 and 1200 reports, each with the flock free
    assert storage.count_reports() == 1200
    busy, frames, copied = storage.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0 and copied == frames
