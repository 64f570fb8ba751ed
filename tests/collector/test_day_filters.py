"""Day filters: the duplicate check against closed days skips the B-tree seeks, never a stored id."""

from __future__ import annotations

import datetime as dt
import math
import random
import re
import threading
import uuid

import pytest

from collector.storage import DEDUP_DAYS, LATEST_SCHEMA_VERSION, ReportGroup, Storage
from collector.storage import day_filter as day_filter_module
from collector.storage import filter_builds as storage_module
from collector.storage.day_filter import BITS_PER_ID, MIN_LOG2_BITS, PROBES, DayFilter

from .test_storage import SPECS, group_of

DAY = "2024-03-01"
EXACT_LOOKUP = re.compile(r"\s*SELECT report_id FROM reports WHERE day IN")


def day_after(day: str, days: int = 1) -> str:
    return (dt.date.fromisoformat(day) + dt.timedelta(days=days)).isoformat()


def uuid4_bytes(rng: random.Random, count: int) -> bytes:
    "UUIDv4 ids (version and variant bits fixed, as the API accepts them) from a seeded generator"
    return b"".join(uuid.UUID(bytes=rng.randbytes(16), version=4).bytes for _ in range(count))


@pytest.fixture(autouse=True)
def _no_day_filters_cached() -> None:
    "Each test starts as a new process would: no day filter cached (the shared ``storage`` fixture opens after this)"
    storage_module._day_filter_cache.clear()


def traced(storage: Storage) -> list[str]:
    statements: list[str] = []
    storage.conn.set_trace_callback(statements.append)
    return statements


def insert(storage: Storage, groups: list[ReportGroup], day: str):
    "insert_reports, then wait for the filters it started building in the background"
    result = storage.insert_reports(groups, day)
    storage_module.wait_for_filter_builds()
    return result


def resent(group: ReportGroup, count: int | None = None) -> ReportGroup:
    return ReportGroup(group.campaign, group.report_ids[:count], group.payloads[:count])


def test_a_filter_has_no_false_negatives_and_its_false_positive_rate_is_the_formula():
    rng = random.Random(11)
    members, count = uuid4_bytes(rng, 20_000), 20_000
    built = DayFilter.build(members)
    assert built.maybe_present(members).all()
    bits = len(built.bits) * 8
    assert bits == 1 << max(MIN_LOG2_BITS, (BITS_PER_ID * count - 1).bit_length())
    fresh = 100_000
    rate = (1 - math.exp(-PROBES * count / bits)) ** PROBES  # Bloom's false positive rate
    expected = fresh * rate
    positives = int(built.maybe_present(uuid4_bytes(rng, fresh)).sum())
    assert positives <= expected + 5 * math.sqrt(expected * (1 - rate))
    restored = DayFilter(built.to_bytes())
    assert restored.maybe_present(members).all()


def test_an_empty_filter_calls_every_id_absent_and_a_build_in_parts_matches_a_whole_one(monkeypatch):
    rng = random.Random(3)
    assert not DayFilter.build(b"").maybe_present(uuid4_bytes(rng, 10)).any()
    members = uuid4_bytes(rng, 3_000)
    whole = DayFilter.build(members)
    monkeypatch.setattr(day_filter_module, "_WINDOW_BITS", 1 << 12)  # build 2^16 bits 4,096 at a time
    assert DayFilter.build(members).to_bytes() == whole.to_bytes()
    monkeypatch.setattr(day_filter_module, "_HASH_CHUNK", 7)  # and hash the ids 7 at a time
    assert DayFilter.build(bytearray(members)).to_bytes() == whole.to_bytes()


def test_closed_days_get_a_filter_and_fresh_ids_are_not_looked_up(storage):
    campaign, _ = storage.create_campaign(SPECS[0], DAY)
    first = group_of(campaign, ["a", "b"] * 50, seed=1)
    insert(storage, [first], DAY)
    insert(storage, [group_of(campaign, ["a"] * 10, seed=2)], day_after(DAY))
    window = range(dt.date.fromisoformat(DAY).toordinal() - DEDUP_DAYS + 1, dt.date.fromisoformat(DAY).toordinal() + 1)
    rows = dict(storage.conn.execute("SELECT day, reports FROM day_filters").fetchall())
    assert {day: rows.get(day) for day in window} == {day: 100 if day == window[-1] else 0 for day in window}
    statements = traced(storage)
    result = insert(storage, [group_of(campaign, ["c"] * 300, seed=3)], day_after(DAY))
    assert result.accepted == 300
    assert not [s for s in statements if EXACT_LOOKUP.match(s)]  # the filter said "absent" for every id
    # ... and every id stored on the filtered day is still a duplicate, alone or mixed with fresh ones
    statements.clear()
    again = insert(storage, [resent(first)], day_after(DAY))
    assert (again.accepted, again.duplicate) == (0, 100)
    assert [s for s in statements if EXACT_LOOKUP.match(s)]
    fresh = group_of(campaign, ["a"] * 3, seed=4)
    mixed = ReportGroup(campaign, first.report_ids[:7] + fresh.report_ids, first.payloads[:7] + fresh.payloads)
    outcome = insert(storage, [mixed], day_after(DAY))
    assert (outcome.accepted, outcome.duplicate) == (3, 7)
    assert outcome.duplicate_ids == set(first.report_ids[:7])
    assert storage.read_aggregate(campaign).n == 100 + 10 + 300 + 3


def test_a_late_insert_into_a_filtered_day_drops_its_filter(storage):
    "A request that took its day just before midnight can still write to a day whose filter is built"
    campaign, _ = storage.create_campaign(SPECS[0], DAY)
    insert(storage, [group_of(campaign, ["a"] * 20, seed=1)], DAY)
    insert(storage, [group_of(campaign, ["a"] * 5, seed=2)], day_after(DAY))  # builds DAY's filter
    late = group_of(campaign, ["b"] * 8, seed=3)
    insert(storage, [late], DAY)
    result = insert(storage, [resent(late)], day_after(DAY))
    assert (result.accepted, result.duplicate) == (0, 8)
    assert storage.read_aggregate(campaign).n == 33


def test_an_insert_during_a_build_keeps_the_filter_from_being_stored(storage, tmp_path, monkeypatch):
    "The filter is read after its claim is committed; an insert after the claim deletes it, so none is stored"
    campaign, _ = storage.create_campaign(SPECS[0], DAY)
    insert(storage, [group_of(campaign, ["a"] * 20, seed=1)], DAY)
    late = group_of(campaign, ["b"] * 6, seed=2)
    build = DayFilter.build

    def build_while_another_writes(ids: bytes) -> DayFilter:
        if len(ids) == 16 * 20:  # DAY's snapshot is read: another process writes to DAY now
            with Storage(tmp_path / "s.db") as other:
                other.insert_reports([late], DAY)
        return build(ids)

    monkeypatch.setattr(DayFilter, "build", staticmethod(build_while_another_writes))
    insert(storage, [group_of(campaign, ["a"] * 5, seed=3)], day_after(DAY))
    monkeypatch.undo()
    day_number = dt.date.fromisoformat(DAY).toordinal()
    assert storage.conn.execute("SELECT count(*) FROM day_filters WHERE day = ?", (day_number,)).fetchone()[0] == 0
    result = insert(storage, [resent(late)], day_after(DAY))
    assert (result.accepted, result.duplicate) == (0, 6)


def test_filters_are_kept_in_the_database_across_restarts(storage, tmp_path):
    campaign, _ = storage.create_campaign(SPECS[0], DAY)
    first = group_of(campaign, ["a"] * 40, seed=1)
    insert(storage, [first], DAY)
    insert(storage, [group_of(campaign, ["a"] * 5, seed=2)], day_after(DAY))
    storage_module._day_filter_cache.clear()  # a new process
    with Storage(tmp_path / "s.db") as reopened:
        reopened.migrate()
        statements = traced(reopened)
        result = insert(reopened, [group_of(campaign, ["b"] * 50, seed=3)], day_after(DAY))
        assert result.accepted == 50
        assert not [s for s in statements if EXACT_LOOKUP.match(s)]
        assert not [s for s in statements if "INSERT OR REPLACE INTO day_filters" in s]  # nothing rebuilt
        assert insert(reopened, [resent(first, 12)], day_after(DAY)).duplicate == 12


def test_a_version_3_database_gains_the_day_filters(tmp_path):
    path = tmp_path / "v3.db"
    with Storage(path) as storage:
        storage.migrate()
        campaign, _ = storage.create_campaign(SPECS[0], DAY)
        first = group_of(campaign, ["a"] * 15, seed=1)
        insert(storage, [first], DAY)
        storage.conn.executescript("DROP TABLE day_filters; PRAGMA user_version = 3;")  # as version 3 left it
    storage_module._day_filter_cache.clear()
    with Storage(path) as storage:
        storage.migrate()
        assert storage.conn.execute("PRAGMA user_version").fetchone()[0] == LATEST_SCHEMA_VERSION
        assert storage.row_count("day_filters") == 0
        result = insert(storage, [resent(first)], day_after(DAY))
        assert (result.accepted, result.duplicate) == (0, 15)
        assert insert(storage, [resent(first, 4)], day_after(DAY)).duplicate == 4  # now through the filter
        assert storage.conn.execute("SELECT reports FROM day_filters WHERE day = ?",
                                    (dt.date.fromisoformat(DAY).toordinal(),)).fetchone()[0] == 15


def test_a_filter_is_read_on_a_connection_of_its_own(storage):
    "The scan of a closed day must not fill the writer's page cache (nor map the day into its RSS)"
    campaign, _ = storage.create_campaign(SPECS[0], DAY)
    insert(storage, [group_of(campaign, ["a"] * 30, seed=1)], DAY)
    mapped = storage.conn.execute("PRAGMA mmap_size").fetchone()[0]
    statements = traced(storage)
    insert(storage, [group_of(campaign, ["a"] * 5, seed=2)], day_after(DAY))
    assert storage.conn.execute("SELECT reports FROM day_filters WHERE day = ?",
                                (dt.date.fromisoformat(DAY).toordinal(),)).fetchone()[0] == 30
    assert not [s for s in statements if re.match(r"\s*SELECT report_id FROM reports WHERE day = ", s)]
    assert mapped > 0 and storage.conn.execute("PRAGMA mmap_size").fetchone()[0] == mapped


def test_a_day_holding_reports_gets_its_filter_after_the_request_is_answered(storage, monkeypatch):
    "Reading a day of millions of reports takes seconds: the insert that starts the build does not wait for it"
    campaign, _ = storage.create_campaign(SPECS[0], DAY)
    insert(storage, [group_of(campaign, ["a"] * 20, seed=1)], DAY)
    release, order = threading.Event(), []
    build = DayFilter.build

    def slow_build(ids: bytes) -> DayFilter:
        if len(ids):
            release.wait(5)
            order.append("built")
        return build(ids)

    monkeypatch.setattr(DayFilter, "build", staticmethod(slow_build))
    assert storage.insert_reports([group_of(campaign, ["a"] * 5, seed=2)], day_after(DAY)).accepted == 5
    order.append("answered")
    release.set()
    storage_module.wait_for_filter_builds()
    assert order == ["answered", "built"]
    assert storage.conn.execute("SELECT reports FROM day_filters WHERE day = ?",
                                (dt.date.fromisoformat(DAY).toordinal(),)).fetchone()[0] == 20


def test_a_built_filter_is_in_the_process_cache_before_its_row_is_visible(storage):
    """The build thread caches a filter before committing it: a request of this process that sees the row never
    reads the bits back (it did, in the moment between the commit and the caching: 8 extra statements)"""
    campaign, _ = storage.create_campaign(SPECS[0], DAY)
    insert(storage, [group_of(campaign, ["a"] * 20, seed=1)], DAY)
    storage_module._day_filter_cache.clear()
    storage.conn.execute("DELETE FROM day_filters")
    day = dt.date.fromisoformat(DAY).toordinal()
    cached_at_commit = []

    def at(statement: str) -> None:
        if statement == "COMMIT" and storage.conn.execute("SELECT count(*) FROM day_filters WHERE reports >= 0"
                                                          ).fetchone()[0]:
            token = storage.conn.execute("SELECT token FROM day_filters WHERE day = ?", (day,)).fetchone()[0]
            cached = storage_module._day_filter_cache.get(str(storage.path), {}).get(day)
            cached_at_commit.append(cached is not None and cached[0] == token)

    storage.conn.set_trace_callback(at)
    try:
        assert storage._build_day_filters([day])
    finally:
        storage.conn.set_trace_callback(None)
    assert cached_at_commit == [True]
    statements = traced(storage)
    assert day in storage._day_filters(range(day, day + 1))
    assert not [s for s in statements if "SELECT bits" in s]
