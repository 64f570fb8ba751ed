"""Contention on the per-day aggregate in PostgreSQL: one row per (campaign, day) against AGGREGATE_SHARDS rows.

Several writers (threads, each with its own connection, as several collector processes would have) insert small
batches of one campaign on one day for a fixed time; each transaction ends with the aggregate update, which holds
the row lock of its shard until commit.  With one shard every writer queues for the same row; with several, the
writers spread over them.  Prints reports/s and the time a transaction spends waiting for locks (sampled from
``pg_stat_activity``).  Starts a throwaway cluster (fsync on) from the server binaries, or uses ``--db-url``.

    python benchmarks/pg_aggregate_shards.py --writers 8 --seconds 10
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SPEC = {"name": "shards", "mechanism": "oue", "epsilon": 1.0, "domain": [f"v{i}" for i in range(32)]}
DAY = "2024-01-01"


def run(url: str, shards: int, writers: int, batch: int, seconds: float) -> dict:
    import psycopg

    import client_sdk
    import collector.storage.postgres as storage_pg
    import estimators
    from collector.storage import ReportGroup, open_storage

    storage_pg.AGGREGATE_SHARDS = shards
    with open_storage(url) as storage:
        storage.migrate()
        campaign, _ = storage.create_campaign({**SPEC, "name": f"shards{shards}"}, DAY)
    mechanism = client_sdk.mechanism_from_spec(campaign.spec)
    payloads = [mechanism.perturb(f"v{i % 32}") for i in range(batch)]
    aggregate = estimators.aggregate(campaign.spec, payloads)
    counts = [0] * writers
    stop = time.monotonic() + seconds

    def writer(index: int) -> None:
        with open_storage(url) as storage:
            while time.monotonic() < stop:
                group = ReportGroup(campaign, [str(uuid.uuid4()) for _ in payloads], payloads, aggregate=aggregate)
                counts[index] += storage.insert_reports([group], DAY).accepted

    waiting = samples = 0
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    with psycopg.connect(url, autocommit=True) as monitor:
        while any(thread.is_alive() for thread in threads):
            row = monitor.execute("SELECT count(*) FILTER (WHERE wait_event_type = 'Lock'), count(*) "
                                  "FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' "
                                  "AND pid <> pg_backend_pid()").fetchone()
            waiting, samples = waiting + row[0], samples + max(row[1], 0)
            time.sleep(0.01)
    for thread in threads:
        thread.join()
    return {"reports_per_second": sum(counts) / seconds, "lock_wait_share": waiting / samples if samples else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=8, help="concurrent writers (connections)")
    parser.add_argument("--batch", type=int, default=20, help="reports per transaction")
    parser.add_argument("--seconds", type=float, default=10.0, help="duration of each run")
    parser.add_argument("--db-url", default="", help="postgresql:// URL of an empty database")
    args = parser.parse_args()
    cluster = None
    url = args.db_url
    if not url:
        from tests.collector.pg_cluster import PostgresCluster

        cluster = PostgresCluster(durable=True)
        url = cluster.create_database("shards")
    try:
        import collector.storage.postgres as storage_pg

        rows = [(shards, run(url, shards, args.writers, args.batch, args.seconds))
                for shards in (1, storage_pg.AGGREGATE_SHARDS)]
        storage_pg.close_pools()
    finally:
        if cluster is not None:
            cluster.stop()
    print(f"aggregate shards: {args.writers} writers, {args.batch} reports per transaction, {args.seconds:g} s each")
    print(f"{'shards':>6} {'reports/s':>10} {'active backends waiting for a lock':>36}")
    for shards, result in rows:
        print(f"{shards:>6} {result['reports_per_second']:>10,.0f} {result['lock_wait_share']:>35.0%}")


if __name__ == "__main__":
    main()
