"""The disk reader cannot order a closed day's reports by arrival: the raw SQLite pages and WAL frames, PostgreSQL's
heap order and a pg_dump, read for a day sent one device after another, agree with the arrival order on no more
pairs than chance (0.5, within K_SE standard errors)."""

from __future__ import annotations

import datetime as dt
import random
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

import client_sdk
import estimators
from collector.storage import ReportGroup, open_storage, payload_text, wait_for_filter_builds

from . import disk_reader
from .test_storage import SPECS

DAY, NEXT_DAY = "2024-03-01", "2024-03-02"
DEVICES = 300  # one request each, one after another: about 4 leaf pages of the day
K_SE = 4.0  # |concordance - 0.5| within 4 standard errors: a false alarm about once in 16,000 runs


def device_groups(campaign, devices: int, seed: int) -> list[ReportGroup]:
    "One report per device, its id drawn from a seeded generator (uuid4 layout)"
    rng = random.Random(seed)
    mechanism = client_sdk.mechanism_from_spec(campaign.spec, rng=client_sdk.DeterministicRandom(seed))
    groups = []
    for _ in range(devices):
        payloads = [mechanism.perturb(campaign.spec.domain[0])]
        report_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        groups.append(ReportGroup(campaign, [report_id], payloads, [payload_text(p) for p in payloads],
                                  estimators.aggregate(campaign.spec, payloads)))
    return groups


def send_day_and_close_it(storage, seed: int = 7) -> list[bytes]:
    "DEVICES requests on DAY, one report each; then a request on NEXT_DAY (the day is closed); the arrival order"
    campaign = storage.create_campaign(SPECS[1], DAY)[0]
    groups = device_groups(campaign, DEVICES, seed)
    for group in groups:
        storage.insert_reports([group], DAY)
    storage.insert_reports(device_groups(campaign, 1, seed + 1), NEXT_DAY)
    wait_for_filter_builds()
    return [uuid.UUID(group.report_ids[0]).bytes for group in groups]


def assert_chance(arrival, rank, what, **kwargs):
    share, se = disk_reader.concordance(arrival, rank, **kwargs)
    assert abs(share - 0.5) <= K_SE * se, f"{what}: {share:.3f} of pairs in arrival order (SE {se:.3f})"


def test_sqlite_pages_and_wal_do_not_order_a_closed_day(tmp_path):
    path = tmp_path / "collector.db"
    with open_storage(path) as storage:
        storage.migrate()
        arrival = send_day_and_close_it(storage)
        ids = set(arrival)
        # read while the collector holds the database open: the files as a copy of them would show
        pages = disk_reader.database_positions(path, ids)
        frames = disk_reader.wal_positions(Path(f"{path}-wal"), ids)
        copies = {report: disk_reader.occurrences((path, Path(f"{path}-wal")), report) for report in arrival}
        assert storage.count_reports() == DEVICES + 1
        # each request rewrote the day's aggregate row: no older version of it is left (each holds the day's text,
        # as do the live row, its primary-key index entry and the campaign's created_day)
        live = 2 * storage._one("SELECT count(*) FROM aggregates WHERE day = ?", (DAY,))[0] + 1
        day_texts = disk_reader.occurrences((path, Path(f"{path}-wal")), DAY.encode())
    assert set(pages) == ids  # the reader finds every report
    by_page = {report: place[0] for report, place in pages.items()}
    # within a page: the cells' content offsets (SQLite fills a page from its end)
    assert_chance(arrival, lambda r: -pages[r][1] if r in pages else None, "cell offsets within a page",
                  same_group=by_page.get)
    assert_chance(arrival, lambda r: (pages[r][0], -pages[r][1]) if r in pages else None, "page and offset")
    assert_chance(arrival, lambda r: (frames[r][0], -frames[r][1]) if r in frames else None, "WAL frames")
    assert set(copies.values()) == {1}  # no second copy of a report anywhere: no freed cell, no older frame
    assert day_texts == live, f"{day_texts - live} older versions of the day's aggregate"


def test_a_vacuum_into_copy_of_an_open_day_is_not_in_arrival_order(tmp_path):
    "docs/deploy.md's backup (VACUUM INTO) writes every table afresh in key order; the open day's layout stays behind"
    path, copy = tmp_path / "collector.db", tmp_path / "backup.db"
    with open_storage(path) as storage:
        storage.migrate()
        campaign = storage.create_campaign(SPECS[1], DAY)[0]
        groups = device_groups(campaign, DEVICES, seed=5)
        for group in groups:
            storage.insert_reports([group], DAY)
        storage.conn.execute("VACUUM INTO ?", (str(copy),))
    arrival = [uuid.UUID(group.report_ids[0]).bytes for group in groups]
    cells = disk_reader.database_cells(copy, set(arrival))
    assert {cell[2] for cell in cells} == set(arrival)
    share, se = disk_reader.cells_concordance(arrival, cells)
    assert abs(share - 0.5) <= K_SE * se, f"cell offsets within a page: {share:.3f} (SE {se:.3f})"
    assert not Path(f"{copy}-wal").exists()


# Scrubs DAY of the database named by argv[1] 100 reports per transaction, and SIGKILLs itself once the second
# chunk's rows are deleted and inserted again, before that transaction commits
KILL_MID_SCRUB = """
import contextlib, os, signal, sys
from collector.storage import Storage, day_scrub

day_scrub.SCRUB_CHUNK = 100
chunks, original = [], day_scrub._secure_delete

@contextlib.contextmanager
def killed_on_the_second(conn):
    with original(conn):
        yield
    chunks.append(1)
    if len(chunks) == 2:
        os.kill(os.getpid(), signal.SIGKILL)

day_scrub._secure_delete = killed_on_the_second
Storage(sys.argv[1])._build_day_filters([int(sys.argv[2])])
"""


def test_a_kill_mid_scrub_loses_no_report(tmp_path):
    path = tmp_path / "collector.db"
    with open_storage(path) as storage:
        storage.migrate()
        campaign = storage.create_campaign(SPECS[1], DAY)[0]
        groups = device_groups(campaign, DEVICES, seed=3)
        for group in groups:
            storage.insert_reports([group], DAY)
        stored = sorted(storage.table_rows("reports"), key=lambda row: row["report_id"])
    day_number = dt.date.fromisoformat(DAY).toordinal()
    killed = subprocess.run([sys.executable, "-c", KILL_MID_SCRUB, str(path), str(day_number)], capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with open_storage(path) as storage:
        # one chunk rewritten, the second rolled back: every report there once, none lost
        assert sorted(storage.table_rows("reports"), key=lambda row: row["report_id"]) == stored
        claim = [row["reports"] for row in storage.table_rows("day_filters") if row["day"] == day_number]
        assert claim == [-1]  # the killed build's claim: no filter
        storage.insert_reports(device_groups(campaign, 1, seed=4), NEXT_DAY)  # the next build scrubs the day
        wait_for_filter_builds()
        rows = sorted(storage.table_rows("reports"), key=lambda row: row["report_id"])
        assert [row for row in rows if row["day"] == day_number] == stored
        arrival = [uuid.UUID(group.report_ids[0]).bytes for group in groups]
        cells = disk_reader.database_cells(path, set(arrival))
    share, se = disk_reader.cells_concordance(arrival, cells)
    assert abs(share - 0.5) <= K_SE * se, f"cell offsets within a page: {share:.3f} (SE {se:.3f})"


def dump_order(url: str, table: str) -> list[bytes]:
    "The report ids of ``table`` in the order of the rows of its pg_dump (COPY), as the dump file holds them"
    info = psycopg.conninfo.conninfo_to_dict(url)
    out = subprocess.run([shutil.which("pg_dump") or "pg_dump", "--data-only", "--table", table, "-h", info["host"],
                          "-p", str(info["port"]), "-U", info["user"], info["dbname"]],
                         check=True, capture_output=True, text=True).stdout
    lines = out.split(f"COPY public.{table} ", 1)[1].split("\n")[1:]
    column = 1 if table == "reports" else 0  # reports: (day, report_id, ...); the distributed tables: report_id first
    return [bytes.fromhex(line.split("\t")[column][3:]) for line in lines[:lines.index("\\.")]]


def test_postgresql_heap_and_dump_do_not_order_a_closed_day(postgres_cluster):
    url = postgres_cluster.create_database("disk_order")
    with open_storage(url) as storage:
        storage.migrate()
        arrival = send_day_and_close_it(storage)
        heap = [bytes(row[0]) for row in storage._all("SELECT report_id FROM reports ORDER BY ctid")]
        scan = [bytes(row[0]) for row in storage._all("SELECT report_id FROM reports")]
        # each insert left a dead version of its day's aggregate shard row: none is left in the table's file
        storage._run("CHECKPOINT")
        aggregates_file = postgres_cluster.data / storage._one("SELECT pg_relation_filepath('aggregates')")[0]
        live = storage._one("SELECT count(*) FROM aggregates WHERE day = ?", (DAY,))[0]
        versions = disk_reader.occurrences([aggregates_file], DAY.encode())
    assert versions == live, f"{versions - live} dead versions of the day's aggregate rows in the heap"
    ids = set(arrival)
    for what, order in (("ctid", heap), ("SELECT * without ORDER BY", scan)):
        place = {report: i for i, report in enumerate(order) if report in ids}
        assert set(place) == ids
        assert_chance(arrival, place.get, what)
    if shutil.which("pg_dump"):
        place = {report: i for i, report in enumerate(dump_order(url, "reports")) if report in ids}
        assert set(place) == ids
        assert_chance(arrival, place.get, "pg_dump")


def test_privacy_md_states_the_scrub_as_the_code_does():
    from collector.storage import DEDUP_DAYS, day_scrub
    from collector.storage import postgres as storage_pg

    text = " ".join((Path(__file__).parents[2] / "docs" / "privacy.md").read_text().split())
    tries = day_scrub.TRUNCATE_TRIES
    for figure in (f"{day_scrub.SCRUB_CHUNK:,} reports per transaction",
                   f"first insert of one of the {DEDUP_DAYS} days", f"tried {tries} times over {sum(range(tries))} s",
                   f"every {storage_pg.SCRUB_RECHECK_SECONDS / 60:g} minutes", f"within {K_SE:g} standard errors"):
        assert figure in text, figure


def test_the_parquet_archive_of_a_day_is_not_in_arrival_order(tmp_path):
    "The archive holds payloads only, in report-id order: a Laplace payload (nearly always distinct) names its report"
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from collector.archive import export_campaign
    from collector.report_codec import decode_payload, untagged

    with open_storage(tmp_path / "collector.db") as storage:
        storage.migrate()
        campaign = storage.create_campaign(SPECS[4], DAY)[0]
        rng = random.Random(11)
        mechanism = client_sdk.mechanism_from_spec(campaign.spec, rng=client_sdk.DeterministicRandom(11))
        arrival = []
        for _ in range(DEVICES):
            payload = mechanism.perturb(5.0)
            arrival.append(payload)
            storage.insert_reports([ReportGroup(campaign, [str(uuid.UUID(int=rng.getrandbits(128), version=4))],
                                                [payload])], DAY)
        written = export_campaign(storage, campaign.name, tmp_path / "archive").written
    rows = [decode_payload("laplace", untagged(raw)) for raw in pq.read_table(written[0]).column("payload").to_pylist()]
    assert sorted(rows) == sorted(arrival)
    unique = [payload for payload in arrival if arrival.count(payload) == 1]  # a payload on a grid may repeat
    assert len(unique) > 0.9 * DEVICES
    place = {payload: i for i, payload in enumerate(rows)}
    share, se = disk_reader.concordance(unique, place.get)
    assert abs(share - 0.5) <= K_SE * se, f"Parquet rows: {share:.3f} of pairs in arrival order (SE {se:.3f})"
