"""A collected batch is not ordered by arrival on disk: neither the leader's nor the helper's per-report rows (their
pages and WAL on SQLite, heap order on PostgreSQL) nor what tied a report to its aggregation job (a job holds the
reports that arrived between two driver rounds) order the batch's reports better than chance."""

from __future__ import annotations

import uuid
from pathlib import Path

from .. import disk_reader
from ..helpers import on_both_backends
from ..test_disk_order import K_SE
from .kit import Pair, end_day, honest_reports, query, spec_json, values_for

pytestmark = on_both_backends

DEVICES = 150
ROUND = 10  # reports uploaded between two driver rounds: each job holds ten consecutive arrivals
TABLES = (("leader", "dist_reports", "dist_jobs"), ("helper", "dist_helper_seen", "dist_helper_jobs"))


def within_chance(share: float, se: float) -> bool:
    return abs(share - 0.5) <= K_SE * se


def test_a_collected_batch_keeps_no_order_of_arrival(tmp_path, backend):
    pair = Pair(tmp_path)
    spec, block = pair.create(spec_json("count", name="disk"))
    reports = honest_reports(spec, block, values_for("count", DEVICES))
    for i, report in enumerate(reports):  # one device after another
        pair.upload([report])
        if i % ROUND == ROUND - 1:
            pair.aggregate()
    batch = end_day()
    assert pair.collect(spec.name, batch).status_code == 200
    arrival = [uuid.UUID(report["report_id"]).bytes for report in reports]
    ids = set(arrival)
    for role, table, jobs in TABLES:
        db = pair.leader_db if role == "leader" else pair.helper_db
        assert query(db, f"SELECT count(*) FROM {table}") == [(DEVICES,)]  # every report kept (replay checks)
        assert query(db, f"SELECT count(*) FROM {table} WHERE job_id <> ''") == [(0,)], f"{role}: job ids kept"
        assert query(db, f"SELECT count(*) FROM {jobs}") == [(0,)], f"{role}: {jobs} kept"
        if backend == "postgresql":
            heap = [bytes(row[0]) for row in query(db, f"SELECT report_id FROM {table} ORDER BY ctid")]
            place = {report: i for i, report in enumerate(heap)}
            share, se = disk_reader.concordance(arrival, place.get)
            assert within_chance(share, se), f"{role} {table} ctid: {share:.3f} (SE {se:.3f})"
            continue
        cells = disk_reader.database_cells(Path(db), ids)
        assert {cell[2] for cell in cells} == ids
        share, se = disk_reader.cells_concordance(arrival, cells)
        assert within_chance(share, se), f"{role} cell offsets within a page: {share:.3f} (SE {se:.3f})"
        frames = disk_reader.wal_positions(Path(f"{db}-wal"), ids)
        share, se = disk_reader.concordance(arrival, frames.get)
        assert within_chance(share, se), f"{role} WAL frames: {share:.3f} (SE {se:.3f})"
