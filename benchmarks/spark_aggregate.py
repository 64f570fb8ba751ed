"""Re-aggregation on Spark against the collector's own aggregation, for N OUE reports (d = 1024).

Each phase runs in a fresh process; the parent samples the resident memory of that process and all its
descendants (the JVM and Spark's Python workers included) every 0.2 s, and the table shows the peak.

1. ingest: N reports (simulated with the SDK's distribution, ``estimators.simulate``) go into a SQLite collector
   database through ``Storage.insert_reports`` in batches of ``--batch``, over ``--days`` days, each batch's
   aggregate computed before the insert as the API does.  "incremental aggregation" is the time of those
   ``estimators.aggregate`` calls alone (the collector's per-request aggregation), "ingest" the whole loop
   without the simulation.
2. rebuild: ``ldp-telemetry aggregates rebuild`` (the collector recomputing every day's aggregate from the raw
   reports, one process).
3. export: ``ldp-telemetry export`` to Parquet.
4. spark: ``aggregate_archive`` with ``--master`` (default local[2]); the session's start-up is timed apart.  The
   result is checked against the collector's aggregates (the same integers, every day) before it is reported.

    python benchmarks/spark_aggregate.py --reports 1000000 --batch 20000
    python benchmarks/spark_aggregate.py --reports 10000000 --batch 20000
    python benchmarks/spark_aggregate.py --reports 1000000   # batches of 1000, as API requests (slower ingest)
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from queue import Empty
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SPEC = {"name": "pages", "mechanism": "oue", "epsilon": 1.0, "domain": [f"v{i}" for i in range(1024)]}
FIRST_DAY = 738000  # a proleptic Gregorian ordinal (2021-07-...); the days that follow hold the reports
SIMULATE_BLOCK = 100_000


def day_text(index: int) -> str:
    import datetime as dt

    return dt.date.fromordinal(FIRST_DAY + index).isoformat()


def ingest(database: str, reports: int, days: int, batch: int) -> dict:
    import numpy as np

    import estimators
    from collector.storage import ReportGroup, open_storage
    from estimators.simulate import simulate

    rng = np.random.default_rng(12)
    aggregating = inserting = 0.0
    with open_storage(database) as storage:
        storage.migrate()
        campaign, _ = storage.create_campaign(SPEC, day_text(0))
        server = estimators.mechanism_for(campaign.spec)
        weights = 1.0 / np.arange(1, 1025)  # a Zipf-like population
        per_day = -(-reports // days)
        done = 0
        while done < reports:
            block = min(SIMULATE_BLOCK, reports - done)
            values = rng.choice(1024, size=block, p=weights / weights.sum())
            payloads = server.payloads_of(simulate(campaign.spec, values, rng))
            for start in range(0, block, batch):
                chunk = payloads[start:start + batch]
                ids = [str(uuid.UUID(bytes=os.urandom(16))) for _ in chunk]
                began = time.perf_counter()
                aggregate = estimators.aggregate(campaign.spec, estimators.parse_payloads(campaign.spec, chunk,
                                                                                          checked=True))
                middle = time.perf_counter()
                storage.insert_reports([ReportGroup(campaign, ids, chunk, aggregate=aggregate)],
                                       day_text((done + start) // per_day))
                aggregating += middle - began
                inserting += time.perf_counter() - middle
            done += block
    return {"ingest": aggregating + inserting, "incremental aggregation": aggregating}


def rebuild(database: str) -> dict:
    from collector.storage import open_storage

    with open_storage(database) as storage:
        began = time.perf_counter()
        storage.rebuild_aggregates("pages")
        return {"rebuild": time.perf_counter() - began}


def export(database: str, archive: str) -> dict:
    from collector.archive import export_campaign
    from collector.storage import open_storage

    with open_storage(database) as storage:
        began = time.perf_counter()
        export_campaign(storage, "pages", archive)
        return {"export": time.perf_counter() - began}


def spark(database: str, archive: str, master: str) -> dict:
    from collector.spark_aggregate import aggregate_archive, spark_session
    from collector.storage import open_storage

    began = time.perf_counter()
    session = spark_session(master, "ldp-telemetry benchmark")
    session.sparkContext.setLogLevel("ERROR")
    started = time.perf_counter()
    result = aggregate_archive(session, archive, "pages")
    finished = time.perf_counter()
    session.stop()
    with open_storage(database) as storage:
        expected = storage.aggregates_by_day(storage.get_campaign("pages"))
    if result.days != expected:
        raise SystemExit("Spark's aggregates differ from the collector's")
    return {"spark session start": started - began, "spark aggregate": finished - started}


def _child(target: Any, args: tuple, queue: Any) -> None:
    queue.put(target(*args))


def tree_rss(pid: int) -> int:
    "Resident bytes of ``pid`` and every descendant (from /proc)"
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            parents[int(entry)] = int(fields[1])
            rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    total, frontier = 0, [pid]
    while frontier:
        current = frontier.pop()
        total += rss.get(current, 0)
        frontier.extend(child for child, parent in parents.items() if parent == current)
    return total


def measure(target: Any, *args: Any) -> tuple[dict, float]:
    "Run ``target(*args)`` in a fresh process; its result and the peak RSS (MiB) of its process tree"
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_child, args=(target, args, queue))
    process.start()
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, tree_rss(process.pid or 0))
            stop.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    while True:  # a child that died (an exception, the OOM killer) puts nothing
        try:
            result = queue.get(timeout=1)
            break
        except Empty:
            if not process.is_alive():
                stop.set()
                raise SystemExit(f"{target.__name__} failed (exit code {process.exitcode})") from None
    process.join()
    stop.set()
    sampler.join()
    if process.exitcode:
        raise SystemExit(f"{target.__name__} failed")
    return result, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=10, help="days the reports are spread over (one file each)")
    parser.add_argument("--batch", type=int, default=1000, help="reports per insert, as one API request")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--workdir", default=None, help="keep the database and archive here (default: a temp dir)")
    args = parser.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="ldp-spark-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    database, archive = str(workdir / "collector.db"), str(workdir / "archive")
    rows = []
    try:
        for target, extra in ((ingest, (args.reports, args.days, args.batch)), (rebuild, ()),
                              (export, (archive,)), (spark, (archive, args.master))):
            result, peak = measure(target, database, *extra)
            for index, (name, seconds) in enumerate(result.items()):
                rows.append((name, seconds, peak if index == 0 else None))
            print(f"  {target.__name__} done", file=sys.stderr, flush=True)
        db_bytes = Path(database).stat().st_size
        archive_bytes = sum(p.stat().st_size for p in Path(archive).rglob("*.parquet"))
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"N = {args.reports:,} OUE reports (d = 1024) over {args.days} days, batches of {args.batch}, "
          f"Spark master {args.master}; load average {os.getloadavg()[0]:.1f}")
    print(f"SQLite database {db_bytes / args.reports:.0f} bytes/report, Parquet archive "
          f"{archive_bytes / args.reports:.0f} bytes/report")
    print("| phase | seconds | reports/s | peak RSS of the process tree (MiB) |")
    print("|---|--:|--:|--:|")
    for name, seconds, peak in rows:
        rate = f"{args.reports / seconds:,.0f}" if "session" not in name else ""
        print(f"| {name} | {seconds:.1f} | {rate} | {'' if peak is None else f'{peak:,.0f}'} |")


if __name__ == "__main__":
    main()
