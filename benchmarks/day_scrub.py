"""The cost of scrubbing a closed day (``collector.storage.day_scrub``): a day of ``--reports`` reports (OUE over
32 values, inserted 1,000 per request), then its rewrite in report-id order timed on each backend.

SQLite: the rewrite (SCRUB_CHUNK reports per transaction; the longest transaction is how long writers wait at most)
and the WAL checkpoint that truncates it.  PostgreSQL (a throwaway cluster with fsync on, or ``--db-url``): the
CLUSTER of ``reports``, one transaction over the whole table, so ``--earlier-days`` days already stored make it
longer.

    python benchmarks/day_scrub.py --reports 100000
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SPEC = {"name": "scrub", "mechanism": "oue", "epsilon": 1.0, "domain": [f"v{i}" for i in range(32)]}
DAY = "2024-01-10"
BATCH = 1000


def fill(storage: object, reports: int, days: list[str]) -> None:
    import client_sdk
    import estimators
    from collector.storage import ReportGroup

    campaign, _ = storage.create_campaign(SPEC, days[0])  # type: ignore[attr-defined]
    mechanism = client_sdk.mechanism_from_spec(campaign.spec)
    payloads = [mechanism.perturb(f"v{i % 32}") for i in range(BATCH)]
    aggregate = estimators.aggregate(campaign.spec, payloads)
    for day in days:
        for _ in range(reports // BATCH):
            group = ReportGroup(campaign, [str(uuid.uuid4()) for _ in payloads], payloads, aggregate=aggregate)
            storage.insert_reports([group], day)  # type: ignore[attr-defined]


def earlier(days: int) -> list[str]:
    start = dt.date.fromisoformat(DAY)
    return [(start - dt.timedelta(days=days - i)).isoformat() for i in range(days)]


def sqlite_run(reports: int, earlier_days: int) -> dict:
    from collector.storage import Storage, day_scrub, filter_builds

    with tempfile.TemporaryDirectory() as tmp:
        storage = Storage(Path(tmp) / "scrub.db")
        storage.migrate()
        fill(storage, reports, [*earlier(earlier_days), DAY])
        filter_builds.wait_for_filter_builds()
        longest = 0.0

        @contextlib.contextmanager
        def timed() -> Iterator[object]:
            nonlocal longest
            began = time.perf_counter()
            with storage.transaction() as conn:
                yield conn
            longest = max(longest, time.perf_counter() - began)

        began = time.perf_counter()
        day_scrub.scrub_sqlite_day(timed, dt.date.fromisoformat(DAY).toordinal(), lambda conn: True)
        rewrite = time.perf_counter() - began
        began = time.perf_counter()
        day_scrub.truncate_wal(storage.conn, storage._writer_locked)
        checkpoint = time.perf_counter() - began
        storage.close()
    return {"rewrite_s": rewrite, "longest_transaction_s": longest, "checkpoint_s": checkpoint}


def postgres_run(url: str, reports: int, earlier_days: int) -> dict:
    from collector.storage import open_storage
    from collector.storage.postgres import close_pools

    with open_storage(url) as storage:
        storage.migrate()
        fill(storage, reports, [*earlier(earlier_days), DAY])
        began = time.perf_counter()
        scrubbed = storage.scrub_closed_days((dt.date.fromisoformat(DAY) + dt.timedelta(days=1)).isoformat())
        cluster = time.perf_counter() - began
    close_pools()
    return {"cluster_s": cluster, "days": len(scrubbed)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=100_000, help="reports of the day scrubbed (and of each "
                        "earlier day)")
    parser.add_argument("--earlier-days", type=int, default=0, help="days stored before it")
    parser.add_argument("--db-url", default="", help="postgresql:// URL of an empty database")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    args = parser.parse_args()
    lite = sqlite_run(args.reports, args.earlier_days)
    print(f"day of {args.reports:,} reports, {args.earlier_days} earlier days stored")
    print(f"SQLite: rewrite {lite['rewrite_s']:.2f} s (longest transaction {lite['longest_transaction_s']:.2f} s), "
          f"WAL checkpoint and truncation {lite['checkpoint_s']:.2f} s")
    if args.no_postgres:
        return
    cluster = None
    url = args.db_url
    if not url:
        from tests.collector.pg_cluster import PostgresCluster

        cluster = PostgresCluster(durable=True)
        url = cluster.create_database("scrub")
    try:
        pg = postgres_run(url, args.reports, args.earlier_days)
    finally:
        if cluster is not None:
            cluster.stop()
    print(f"PostgreSQL: CLUSTER of reports {pg['cluster_s']:.2f} s ({pg['days']} days scrubbed; writers of reports "
          "wait that long)")


if __name__ == "__main__":
    main()
