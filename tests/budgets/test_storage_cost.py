"""What the collector's SQLite storage costs: counts read from the aggregates (no statement on the reports), a fixed
number of statements per insert (no savepoint, none growing with the days that hold reports), and a rebuild that
scans the reports outside the memory map.  What the storage does is tests/collector/test_report_storage.py and
test_day_filters.py."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from collector.storage import DEDUP_DAYS, Storage
from tests.collector.test_day_filters import (
    EXACT_LOOKUP,
    _no_day_filters_cached,  # noqa: F401 (autouse: as in its old module)
    day_after,
    insert,
)
from tests.collector.test_report_storage import DAY, reads_reports, traced
from tests.collector.test_storage import SPECS, group_of
from tests.sqltrace import traced_connections

pytestmark = pytest.mark.budget


def test_counts_come_from_the_aggregates(storage):
    campaign, _ = storage.create_campaign(SPECS[0], DAY)
    for day in ("2024-03-01", "2024-03-02"):
        storage.insert_reports([group_of(campaign, ["a"] * 30, seed=len(day))], day)
    statements = traced(storage)
    assert storage.count_reports() == 60 and storage.count_reports("grr") == 60
    assert statements and not reads_reports(statements)


def test_campaign_show_runs_no_statement_on_reports(storage, tmp_path):
    from ldp_telemetry.cli import main

    campaign, _ = storage.create_campaign(SPECS[0], DAY)
    storage.insert_reports([group_of(campaign, ["a"] * 12, seed=9)], DAY)
    with traced_connections() as statements:
        result = CliRunner().invoke(main, ["campaign", "show", "grr", "--db", str(tmp_path / "s.db")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["reports"] == 12
    assert any("aggregates" in s for s in statements)
    assert not reads_reports(statements)


def insert_statements(storage: Storage, campaign, count: int, seed: int) -> list[str]:
    statements = traced(storage)
    storage.insert_reports([group_of(campaign, ["a"] * count, seed=seed)], DAY)
    storage.conn.set_trace_callback(None)
    return statements


def test_an_insert_runs_no_savepoint_and_a_fixed_number_of_statements(storage):
    "A savepoint makes SQLite copy every page the insert touches to a statement journal; statements stay constant"
    campaign, _ = storage.create_campaign(SPECS[0], DAY)
    storage.insert_reports([group_of(campaign, ["a"], seed=0)], DAY)  # the version id is looked up once
    first = insert_statements(storage, campaign, 1000, seed=1)
    for seed in range(2, 6):
        storage.insert_reports([group_of(campaign, ["b"] * 1000, seed=seed)], DAY)
    later = insert_statements(storage, campaign, 1000, seed=7)
    assert not [s for s in first + later if re.match(r"\s*(SAVEPOINT|ROLLBACK TO|RELEASE)", s, re.IGNORECASE)]
    assert len(later) == len(first)
    assert storage.count_reports() == 6001


def test_rebuild_reads_the_reports_without_the_memory_map(storage):
    "A scan of every report through the map would count the whole file in the process's RSS"
    campaign, _ = storage.create_campaign(SPECS[0], DAY)
    storage.insert_reports([group_of(campaign, ["a"] * 30, seed=1)], DAY)
    statements = traced(storage)
    storage.rebuild_aggregates()
    storage.conn.set_trace_callback(None)
    scans = [i for i, s in enumerate(statements) if re.search(r"\bFROM reports\b", s)]
    maps = [(i, s) for i, s in enumerate(statements) if "mmap_size" in s]
    assert scans and maps[0][1] == "PRAGMA mmap_size = 0" and maps[0][0] < scans[0]
    assert maps[-1][0] > scans[-1] and maps[-1][1] != "PRAGMA mmap_size = 0"
    assert storage.conn.execute("PRAGMA mmap_size").fetchone()[0] > 0


def test_statements_per_batch_do_not_grow_with_the_days_holding_reports(storage):
    campaign, _ = storage.create_campaign(SPECS[0], DAY)
    today = day_after(DAY, DEDUP_DAYS)
    insert(storage, [group_of(campaign, ["a"] * 10, seed=1)], day_after(DAY, DEDUP_DAYS - 1))
    insert(storage, [group_of(campaign, ["a"] * 10, seed=2)], today)
    statements = traced(storage)
    insert(storage, [group_of(campaign, ["a"] * 1000, seed=3)], today)
    one_day = len(statements)
    for offset in range(DEDUP_DAYS - 1):  # now every day of the window holds reports (late inserts)
        insert(storage, [group_of(campaign, ["a"] * 10, seed=10 + offset)], day_after(DAY, offset))
    insert(storage, [group_of(campaign, ["a"] * 10, seed=4)], today)  # rebuilds the dropped filters
    statements.clear()
    insert(storage, [group_of(campaign, ["a"] * 1000, seed=5)], today)
    assert len(statements) == one_day
    assert not [s for s in statements if EXACT_LOOKUP.match(s)]
