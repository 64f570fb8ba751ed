"""Costs of the collector's storage at two sizes side by side, with their ratio (issue 14: cost that does not grow).

For each size a fresh SQLite file in a temporary directory gets an OUE campaign with d = 1024 and ``N`` reports
on one day (the day before the measured one), prefilled through ``Storage.insert_reports`` in groups of 20,000
(ids sorted per group, so the prefill itself is quick).  Then, at that size:

* ingest today: ``insert_reports`` of batches of 1000 reports (aggregate computed before, as the API does),
  1000 over the median time of ``--batches`` batches, into the next day (the database already holds N reports);
  the two sizes take turns batch by batch, so both are measured under the same load;
* ingest same day: the same, into the day that already holds the N reports (how a busy day grows);
* campaign show: wall time of ``ldp-telemetry campaign show`` (in process, best of 3);
* rebuild: peak RSS and time of ``Storage.rebuild_aggregates`` in a child process;
* bytes per report: the database file (after a checkpoint) over N.

The yardstick (``sqlite``): the same rows inserted by plain ``sqlite3`` into a fresh file, 1000 per transaction,
in the collector's layout (clustered on the day and the random id: nothing orders rows by arrival) and in an
append layout (rowid in arrival order with a unique index on the id), taking turns batch by batch; then the
collector's layout over 1 and over 2 files (report ids sharded by hash), each file written by its own thread.

Per-day estimates are measured on their own database: 1 day and 365 days of reports (OUE d = 1024), answered by
``GET /v1/campaigns/<name>/estimate?granularity=day`` in full and with ``top=5`` (the slim form).

The device queue: ``Client.record()`` (OUE d = 1024, a spec already fetched, no network) on a state file whose
queue holds 100 and 10,000 reports (with room for more: the depth is the only difference), median of
``--records`` calls, and the SQL statements one call runs (a record that also drops the oldest report runs 5
more, at any depth; ``tests/client_sdk/test_queue.py``).

OUE from the wire: ``estimators.estimate(spec, payloads)`` on 1e5 and 1e6 hex payloads (d = 1024), microseconds
per report, least CPU time of 3 runs.  (``--quick``: 2e4 and 2e5.)  CLI start-up is not a cost that grows
with anything: see ``benchmarks/cli_startup.py``.

    python benchmarks/growth.py --quick        # 2e4 vs 5e5 reports, about a minute
    python benchmarks/growth.py                # 1e5 vs 5e6 reports
    python benchmarks/growth.py --source DIR   # measure another checkout (e.g. the previous release)
    python benchmarks/growth.py --prefilled DIR   # prefill once, measure copies (same files for every checkout)

Everything runs on loopback-free local files; the temporary directories are removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
D = 1024
SPEC = {"name": "bench", "mechanism": "oue", "epsilon": 1.0, "domain": [f"v{i}" for i in range(D)]}
PREFILL_DAY, NEXT_DAY = "2024-06-01", "2024-06-02"
PREFILL_GROUP = 20_000
BATCH = 1000


def pool_of_payloads(spec, size: int = 2048) -> list[str]:
    import client_sdk

    mechanism = client_sdk.mechanism_from_spec(spec, rng=client_sdk.DeterministicRandom(7))
    return [mechanism.perturb(spec.domain[i % 50]) for i in range(size)]


def make_group(campaign, pool: list[str], count: int, offset: int, *, sort: bool = False):
    import estimators
    from collector.storage import ReportGroup, payload_text

    ids = [str(uuid.uuid4()) for _ in range(count)]
    if sort:
        ids.sort()
    payloads = [pool[(offset + i) % len(pool)] for i in range(count)]
    # payload_texts: the previous release stored them; the current storage ignores them
    return ReportGroup(campaign, ids, payloads, [payload_text(p) for p in payloads],
                       estimators.aggregate(campaign.spec, payloads))


def prefill(storage, campaign, pool: list[str], total: int, day: str) -> float:
    started = time.perf_counter()
    for start in range(0, total, PREFILL_GROUP):
        storage.insert_reports([make_group(campaign, pool, min(PREFILL_GROUP, total - start), start, sort=True)],
                               day)
    return time.perf_counter() - started


def ingest_rates(targets: list[tuple], batches: int, day: str) -> list[tuple[float, float]]:
    """Reports per second through insert_reports into each ``(storage, campaign, pool)`` of ``targets``: 1000 over
    the median time of a batch, and the median CPU time of a batch per report in microseconds (user and system).

    The targets take turns batch by batch, so that every size is measured under the same machine load (a load
    that changes between two back-to-back measurements showed up as a ratio of 0.79 in one quiet run)."""
    groups = [[make_group(campaign, pool, BATCH, i * BATCH) for i in range(batches)]
              for _storage, campaign, pool in targets]
    seconds: list[list[float]] = [[] for _ in targets]
    cpu: list[list[float]] = [[] for _ in targets]
    for i in range(batches):
        for k, (storage, _campaign, _pool) in enumerate(targets):
            started, cpu_started = time.perf_counter(), time.process_time()
            storage.insert_reports([groups[k][i]], day)
            seconds[k].append(time.perf_counter() - started)
            cpu[k].append(time.process_time() - cpu_started)
    return [(BATCH / sorted(s)[len(s) // 2], 1e6 * sorted(c)[len(c) // 2] / BATCH) for s, c in zip(seconds, cpu)]


PLAIN_LAYOUTS = {
    # the collector's layout: nothing orders a day's rows by arrival (a batch dirties about a page per report)
    "clustered on (day, random id)": "CREATE TABLE r (day INTEGER NOT NULL, report_id BLOB NOT NULL, version_id "
                                     "INTEGER NOT NULL, payload BLOB NOT NULL, PRIMARY KEY (day, report_id)) "
                                     "WITHOUT ROWID",
    # rows appended in arrival order, a unique index for the duplicate check (what the collector must not store)
    "rowid (arrival order) + id index": "CREATE TABLE r (day INTEGER NOT NULL, report_id BLOB NOT NULL, version_id "
                                        "INTEGER NOT NULL, payload BLOB NOT NULL); "
                                        "CREATE UNIQUE INDEX r_id ON r (day, report_id)",
}


def plain_sqlite_rates(batches: int, workdir: Path) -> dict[str, tuple[float, float]]:
    """The yardstick: the same rows (a day, 16 random id bytes, a version id, the 128 payload bytes of OUE
    d = 1024) inserted by plain ``sqlite3`` into a fresh file, 1000 per transaction (sorted by id, as the
    collector inserts them), WAL with synchronous=FULL and the collector's page cache: reports/s (1000 over the
    median batch time) and the median CPU us per report, per layout; the layouts take turns batch by batch"""
    import sqlite3

    import client_sdk
    from collector.report_codec import encode_payloads

    payloads = encode_payloads("oue", pool_of_payloads(client_sdk.load_spec(SPEC), 256))
    connections = []
    for i, schema in enumerate(PLAIN_LAYOUTS.values()):
        conn = sqlite3.connect(str(workdir / f"plain-{i}.db"), isolation_level=None)
        for pragma in ("journal_mode = WAL", "synchronous = FULL", "cache_size = -65536"):
            conn.execute(f"PRAGMA {pragma}")
        conn.executescript(schema)
        connections.append(conn)
    seconds: list[list[float]] = [[] for _ in connections]
    cpu: list[list[float]] = [[] for _ in connections]
    for b in range(batches):
        for k, conn in enumerate(connections):
            rows = sorted((19876, uuid.uuid4().bytes, 1, payloads[(b + j) % len(payloads)]) for j in range(BATCH))
            started, cpu_started = time.perf_counter(), time.process_time()
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT INTO r VALUES (?, ?, ?, ?)", rows)
            conn.execute("COMMIT")
            seconds[k].append(time.perf_counter() - started)
            cpu[k].append(time.process_time() - cpu_started)
    for conn in connections:
        conn.close()
    return {name: (BATCH / sorted(s)[len(s) // 2], 1e6 * sorted(c)[len(c) // 2] / BATCH)
            for name, s, c in zip(PLAIN_LAYOUTS, seconds, cpu)}


def plain_sqlite_sharded(batches: int, workdir: Path) -> dict[int, tuple[float, float]]:
    """The collector's layout split over 1 and 2 files (as if report ids were sharded by hash), each file written by
    a thread of its own (SQLite releases the interpreter lock while it works), ``1000 / files`` rows per
    transaction and file, ``batches`` transactions per file: rows per second over all files, CPU us per row"""
    import threading

    import client_sdk
    from collector.report_codec import encode_payloads

    payloads = encode_payloads("oue", pool_of_payloads(client_sdk.load_spec(SPEC), 256))
    out = {}
    for files in (1, 2):
        per = BATCH // files
        start, ended = threading.Event(), []
        threads = [threading.Thread(target=_write_shard, args=(workdir / f"shard-{files}-{i}.db", [
            sorted((19876, uuid.uuid4().bytes, 1, payloads[(b + j) % len(payloads)]) for j in range(per))
            for b in range(batches)], start, ended)) for i in range(files)]
        for thread in threads:
            thread.start()
        time.sleep(0.5)  # every file created and its rows drawn
        started, cpu_started = time.perf_counter(), time.process_time()
        start.set()
        for thread in threads:
            thread.join()
        rows = batches * per * files
        out[files] = (rows / (max(ended) - started), 1e6 * (time.process_time() - cpu_started) / rows)
    return out


def _write_shard(path: Path, rows: list[list[tuple]], start, ended: list[float]) -> None:
    "One file of ``plain_sqlite_sharded``: created, then (once ``start`` is set) one transaction per batch of rows"
    import sqlite3

    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    for pragma in ("journal_mode = WAL", "synchronous = FULL", "cache_size = -65536"):
        conn.execute(f"PRAGMA {pragma}")
    conn.executescript(PLAIN_LAYOUTS["clustered on (day, random id)"])
    start.wait()
    for batch in rows:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO r VALUES (?, ?, ?, ?)", batch)
        conn.execute("COMMIT")
    conn.close()
    ended.append(time.perf_counter())


def campaign_show_seconds(db: Path) -> float:
    from click.testing import CliRunner

    from ldp_telemetry.cli import main

    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        result = CliRunner().invoke(main, ["campaign", "show", "bench", "--db", str(db)])
        best = min(best, time.perf_counter() - started)
        if result.exit_code != 0:
            raise SystemExit(f"campaign show failed: {result.output}")
    return best


def rebuild_in_child(db: Path, source: Path) -> tuple[float, float]:
    """Peak RSS (MiB) and seconds of rebuild_aggregates in a fresh process.

    The peak is the child's own VmHWM (Linux): ``wait4``'s ru_maxrss also counts the parent's resident pages at
    the fork (Linux records the forked copy's high-water mark at exec), here the pages of the file the measuring
    process read through its memory map."""
    code = ("import sys; sys.path.insert(0, sys.argv[2]); from collector.storage import Storage; "
            "s = Storage(sys.argv[1]); s.rebuild_aggregates('bench'); s.close()\n"
            "try:\n    print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))\n"
            "except OSError:\n    pass")
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", code, str(db), str(source)], stdout=subprocess.PIPE, text=True)
    out = child.stdout.read() if child.stdout else ""
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit("rebuild failed")
    return (int(out.split()[-1]) / 1024 if out.strip() else usage.ru_maxrss / 1024), seconds


def prefilled_copy(total: int, prefilled: Path, db: Path) -> float:
    "Copy the database of ``total`` reports kept in ``prefilled`` to ``db``, building it first if missing"
    import client_sdk
    from collector.storage import Storage

    kept = prefilled / f"growth-{total}.db"
    seconds = 0.0
    if not kept.exists():
        building = kept.with_suffix(".building")
        with Storage(building) as storage:
            storage.migrate()
            campaign, _ = storage.create_campaign(SPEC, PREFILL_DAY)
            seconds = prefill(storage, campaign, pool_of_payloads(client_sdk.load_spec(SPEC)), total, PREFILL_DAY)
            storage.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        building.rename(kept)
        Path(f"{building}.writer-lock").unlink(missing_ok=True)
    shutil.copyfile(kept, db)
    descriptor = os.open(db, os.O_RDONLY)
    try:  # the copy's dirty pages written now, not by the first checkpoint's fsync of the measured database
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    return seconds


def open_size(total: int, workdir: Path, prefilled: Path | None, stack: ExitStack) -> tuple[dict, tuple]:
    """A database of ``total`` reports on PREFILL_DAY, open (closed by ``stack``), with the first batch of the next
    day inserted and the filter of the closed day built (where the checkout has filters); its figures so far and
    its ``(storage, campaign, pool)``"""
    import client_sdk
    from collector.storage import Storage

    db = workdir / f"growth-{total}.db"
    pool = pool_of_payloads(client_sdk.load_spec(SPEC))
    out: dict = {"db": db}
    if prefilled is not None:
        out["prefill_s"] = prefilled_copy(total, prefilled, db)
    storage = stack.enter_context(Storage(db))
    storage.migrate()
    campaign, _ = storage.create_campaign(SPEC, PREFILL_DAY)
    if prefilled is None:
        out["prefill_s"] = prefill(storage, campaign, pool, total, PREFILL_DAY)
    # the first insert of the next day; the collector then builds the closed day's filter in a thread, once
    # (waited for here, where the checkout has it, and timed with that batch)
    started = time.perf_counter()
    storage.insert_reports([make_group(campaign, pool, BATCH, 0)], NEXT_DAY)
    import collector.storage as storage_module

    getattr(storage_module, "wait_for_filter_builds", lambda: None)()
    out["first_next_s"] = time.perf_counter() - started
    return out, (storage, campaign, pool)


def measure_sizes(sizes: tuple[int, int], batches: int, source: Path, workdir: Path, prefilled: Path | None = None,
                  ingest_only: bool = False) -> dict[int, dict]:
    "The storage figures of both sizes; the ingest rates measured batch by batch in turn (``ingest_rates``)"
    with ExitStack() as stack:
        opened = {size: open_size(size, workdir, prefilled, stack) for size in sizes}
        results = {size: out for size, (out, _target) in opened.items()}
        targets = [target for _out, target in opened.values()]
        for size, (rate, cpu) in zip(sizes, ingest_rates(targets, batches, NEXT_DAY)):
            results[size]["ingest_next"], results[size]["cpu_next"] = rate, cpu
        if not ingest_only:
            for size, (rate, cpu) in zip(sizes, ingest_rates(targets, batches, PREFILL_DAY)):
                results[size]["ingest_same"], results[size]["cpu_same"] = rate, cpu
            for size, (storage, _campaign, _pool) in zip(sizes, targets):
                storage.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                results[size]["stored"] = storage.count_reports()
    for out in results.values():
        db = out.pop("db")
        if not ingest_only:
            out["bytes_per_report"] = db.stat().st_size / out.pop("stored")
            out["show_s"] = campaign_show_seconds(db)
            out["rebuild_mib"], out["rebuild_s"] = rebuild_in_child(db, source)
        db.unlink()
    return results


def per_day_estimates(days: int, workdir: Path) -> dict:
    "Bytes and seconds of the per-day estimate over ``days`` days, in full and with top=5"
    import datetime as dt

    import client_sdk
    from collector import create_app
    from collector.storage import Storage

    db = workdir / f"days-{days}.db"
    spec = client_sdk.load_spec(SPEC)
    pool = pool_of_payloads(spec, 256)
    with Storage(db) as storage:
        storage.migrate()
        admin, _ = storage.create_key("admin", PREFILL_DAY)
        campaign, _ = storage.create_campaign(SPEC, PREFILL_DAY)
        first = dt.date.fromisoformat(PREFILL_DAY)
        for i in range(days):
            storage.insert_reports([make_group(campaign, pool, 50, i)], (first + dt.timedelta(days=i)).isoformat())
    client = create_app({"DATABASE": str(db), "RATE_LIMIT": 0}).test_client()
    headers = {"Authorization": f"Bearer {admin}"}
    out = {}
    for name, query in (("full", ""), ("top5", "&top=5")):
        started = time.perf_counter()
        response = client.get(f"/v1/campaigns/bench/estimate?granularity=day{query}", headers=headers)
        seconds = time.perf_counter() - started
        if response.status_code != 200:
            raise SystemExit(f"estimate failed: {response.status_code} {response.data[:200]!r}")
        body = json.loads(response.data)
        slim = "top" in body  # a release without the top parameter answers in full
        out[name] = (len(response.data), seconds, slim)
    db.unlink()
    return out


def queue_record(depth: int, records: int, workdir: Path) -> tuple[float, int]:
    "Median seconds of Client.record() with ``depth`` reports queued, and the SQL statements of one call"
    import logging

    import client_sdk
    from client_sdk.runtime.transport import MockTransport, Response

    logging.getLogger("client_sdk").setLevel(logging.ERROR)
    spec = client_sdk.load_spec(SPEC)
    listing = {"campaigns": [{"name": spec.name, "fingerprint": spec.fingerprint, "spec": spec.to_dict()}]}
    transport = MockTransport(lambda request: Response.from_json(200, listing))
    limits = client_sdk.QueueLimits(max_reports=2 * depth)  # depth is the only difference: nothing is dropped
    client = client_sdk.Client("http://127.0.0.1:9", "key", workdir / f"device-{depth}", campaigns=[spec.name],
                               transport=transport, background=False, queue_limits=limits)
    try:
        pool = pool_of_payloads(spec, 64)
        now = time.time()
        rows = []
        for i in range(depth):
            text = json.dumps({"report_id": str(uuid.uuid4()), "campaign": spec.name,
                               "fingerprint": spec.fingerprint, "payload": pool[i % len(pool)]},
                              separators=(",", ":"))
            rows.append((text[15:51], spec.name, text, len(text.encode()), now))
        with client.state.transaction() as conn:  # prefill in one transaction: the triggers keep the totals
            conn.executemany("INSERT INTO queue (report_id, campaign, body, size, created) VALUES (?, ?, ?, ?, ?)",
                             rows)
        statements: list[str] = []
        client.state.conn.set_trace_callback(statements.append)
        client.record(spec.name, spec.domain[0])
        client.state.conn.set_trace_callback(None)
        seconds = []
        for i in range(records):
            started = time.perf_counter()
            client.record(spec.name, spec.domain[i % 50])
            seconds.append(time.perf_counter() - started)
        if client.pending() < min(depth, 10_000):
            raise SystemExit("the queue did not hold its reports")
    finally:
        client.close(timeout=0)
    return sorted(seconds)[len(seconds) // 2], len(statements)


def oue_from_wire(n: int, repeat: int = 3) -> float:
    """Least CPU seconds of estimators.estimate on n OUE wire payloads (d = 1024): single-threaded, and CPU time
    stays meaningful on a shared machine"""
    import numpy as np

    import client_sdk
    import estimators
    from estimators.simulate import simulate

    spec = client_sdk.load_spec({**SPEC, "domain": list(range(D))})
    rng = np.random.default_rng(14)
    payloads = simulate(spec, rng.integers(0, D, n), rng).to_payloads()
    estimators.estimate(spec, payloads[:1000])
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        estimators.estimate(spec, payloads)
        best = min(best, time.process_time() - started)
    return best


def ratio(small: float, large: float) -> str:
    return f"{large / small:.2f}" if small else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2e4 vs 5e5 reports instead of 1e5 vs 5e6")
    parser.add_argument("--sizes", type=int, nargs=2, default=None, metavar=("SMALL", "LARGE"),
                        help="stored reports of the two sizes")
    parser.add_argument("--batches", type=int, default=None, help="batches of 1000 per ingest measurement")
    parser.add_argument("--source", type=Path, default=REPO, help="checkout whose collector is measured")
    parser.add_argument("--prefilled", type=Path, default=None,
                        help="keep the prefilled databases in this directory and measure copies of them (built on "
                             "first use), so runs of two checkouts measure the same files")
    parser.add_argument("--ingest-only", action="store_true",
                        help="storage: only the ingest into the next day (no same-day ingest, show, rebuild)")
    parser.add_argument("--records", type=int, default=200, help="record() calls timed per queue depth")
    parser.add_argument("--only", choices=("storage", "sqlite", "days", "queue", "wire"), nargs="*", default=None,
                        help="measure only these items (default: all)")
    args = parser.parse_args()
    source = args.source.resolve()
    sys.path.insert(0, str(source))
    if source != REPO:
        sys.path.insert(1, str(REPO))  # client_sdk/estimators of this checkout only where the other has none
    small, large = args.sizes or ((20_000, 500_000) if args.quick else (100_000, 5_000_000))
    batches = args.batches or (20 if args.quick else 50)

    only = set(args.only or ("storage", "sqlite", "days", "queue", "wire"))
    wire_sizes = (20_000, 200_000) if args.quick else (100_000, 1_000_000)

    workdir = Path(tempfile.mkdtemp(prefix="ldp-growth-"))
    try:
        results = measure_sizes((small, large), batches, source, workdir, args.prefilled, args.ingest_only) \
            if "storage" in only else {}
        days = {count: per_day_estimates(count, workdir) for count in (1, 365)} if "days" in only else {}
        queue = {depth: queue_record(depth, args.records, workdir) for depth in (100, 10_000)} \
            if "queue" in only else {}
        plain = plain_sqlite_rates(batches, workdir) if "sqlite" in only else {}
        sharded = plain_sqlite_sharded(2 * batches, workdir) if "sqlite" in only else {}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    wire = {n: oue_from_wire(n) for n in wire_sizes} if "wire" in only else {}

    print(f"growth: OUE d={D}, {os.cpu_count()} CPUs, source {source}")
    if results:
        print_storage(results, small, large)
    if plain:
        print(f"{'plain SQLite, fresh file, batch 1000 (yardstick)':<44} {'reports/s':>16} {'CPU us/report':>16}")
        for name, (rate, cpu_us) in plain.items():
            print(f"{name:<44} {rate:>16,.0f} {cpu_us:>16.1f}")
        for files, (rate, cpu_us) in sharded.items():
            label = f"clustered, {files} file{'s' if files > 1 else ''} in parallel threads"
            print(f"{label:<44} {rate:>16,.0f} {cpu_us:>16.1f}")
    if days:
        print_days(days)
    if queue:
        (q_small, n_small), (q_large, n_large) = queue[100], queue[10_000]
        print(f"{'cost':<44} {'queue of 100':>16} {'queue of 10,000':>16} {'ratio':>7}")
        print(f"{'device record(), ms (median)':<44} {1e3 * q_small:>16.3f} {1e3 * q_large:>16.3f} "
              f"{ratio(q_small, q_large):>7}")
        print(f"{'device record(), SQL statements':<44} {n_small:>16} {n_large:>16} {ratio(n_small, n_large):>7}")
    if wire:
        (n_small, w_small), (n_large, w_large) = wire.items()
        per_small, per_large = 1e6 * w_small / n_small, 1e6 * w_large / n_large
        print(f"{'cost':<44} {f'{n_small:,} reports':>16} {f'{n_large:,} reports':>16} {'ratio':>7}")
        print(f"{'OUE estimate from the wire, CPU s':<44} {w_small:>16.3f} {w_large:>16.3f} "
              f"{ratio(w_small, w_large):>7}")
        print(f"{'OUE estimate from the wire, us per report':<44} {per_small:>16.2f} {per_large:>16.2f} "
              f"{ratio(per_small, per_large):>7}")


def print_storage(results: dict, small: int, large: int) -> None:
    a, b = results[small], results[large]
    print(f"storage: batch {BATCH}")
    print(f"prefill: {small:,} reports in {a['prefill_s']:.1f} s, {large:,} in {b['prefill_s']:.1f} s")
    print(f"{'cost':<44} {f'{small:,} stored':>16} {f'{large:,} stored':>16} {'ratio':>7}")
    rows = [
        ("first batch of the next day + filter, s", a["first_next_s"], b["first_next_s"], "{:.2f}"),
        ("ingest into the next day, reports/s", a["ingest_next"], b["ingest_next"], "{:,.0f}"),
        ("ingest into the next day, CPU us/report", a["cpu_next"], b["cpu_next"], "{:.1f}"),
    ]
    rows += [] if "ingest_same" not in a else [
        ("ingest into the day holding them, reports/s", a["ingest_same"], b["ingest_same"], "{:,.0f}"),
        ("ingest into the day holding them, CPU us/report", a["cpu_same"], b["cpu_same"], "{:.1f}"),
        ("campaign show, s", a["show_s"], b["show_s"], "{:.3f}"),
        ("aggregates rebuild, peak RSS MiB", a["rebuild_mib"], b["rebuild_mib"], "{:,.0f}"),
        ("aggregates rebuild, s", a["rebuild_s"], b["rebuild_s"], "{:.1f}"),
        ("database bytes per report", a["bytes_per_report"], b["bytes_per_report"], "{:.0f}"),
    ]
    for label, x, y, fmt in rows:
        print(f"{label:<44} {fmt.format(x):>16} {fmt.format(y):>16} {ratio(x, y):>7}")


def print_days(days: dict) -> None:
    print(f"{'cost':<44} {'1 day':>16} {'365 days':>16} {'ratio':>7}")
    for name, label in (("full", "per-day estimate (full)"), ("top5", "per-day estimate (top=5)")):
        one, year = days[1][name], days[365][name]
        note = "" if year[2] or name == "full" else " [answered in full]"
        print(f"{label + ', KB':<44} {one[0] / 1000:>16,.1f} {year[0] / 1000:>16,.1f} {ratio(one[0], year[0]):>7}"
              f"{note}")
        print(f"{label + ', s':<44} {one[1]:>16.3f} {year[1]:>16.3f} {ratio(one[1], year[1]):>7}")


if __name__ == "__main__":
    main()
