"""Bounded load test of the collector on loopback: accepted reports per second for batches of 1, 100 and 1000.

Starts ``ldp-telemetry serve`` on 127.0.0.1 (a free port, a fresh SQLite file in a temporary directory), creates
a key and an OUE campaign, prepares every request body before the clock starts (fresh report ids, perturbed
payloads), then lets several client processes post them as fast as the server answers.  Each run stops when its
bodies are sent or after ``--max-seconds``; the server is stopped and the directory removed at the end.

    python benchmarks/collector_load.py --workers 2 --clients 4
    python benchmarks/collector_load.py --backend postgresql --servers 2 --workers 1 --batches 1000
    python benchmarks/collector_load.py --domain-size 1024 --batches 1000 --source OTHER   # another checkout serves

With ``--backend postgresql`` the reports go to a PostgreSQL database (``--db-url``, or a throwaway cluster
started from the server binaries with fsync on) and ``--servers N`` starts N ``serve`` processes on separate
ports, the clients spread over them, as N hosts behind a load balancer would be.

Validation (``check_payload`` per report), the insert with ``INSERT OR IGNORE`` and the aggregate update are all
included: the server does exactly what it does in production.  Besides the rate, each run prints the CPU time
(user + system) the server's processes spent per accepted report: the steadier figure on a shared machine.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.collector.ports import free_port  # noqa: E402

SPEC = {"name": "bench", "mechanism": "oue", "epsilon": 1.0, "domain": [f"v{i}" for i in range(32)]}
# (batch size, total reports) per run: bounded so the whole benchmark takes well under a minute
RUNS = ((1, 3_000), (100, 60_000), (1000, 200_000))


def prepare_bodies(spec, batch: int, total: int) -> list[bytes]:
    "Request bodies with fresh report ids; payloads drawn from a pool of real perturbations"
    import client_sdk

    mechanism = client_sdk.mechanism_from_spec(spec, rng=client_sdk.DeterministicRandom(batch))
    pool = [mechanism.perturb(value) for value in (spec.domain * 32)[:2048]]
    fingerprint = spec.fingerprint
    bodies = []
    for start in range(0, total, batch):
        reports = [{"report_id": str(uuid.uuid4()), "campaign": spec.name, "fingerprint": fingerprint,
                    "payload": pool[(start + i) % len(pool)]} for i in range(min(batch, total - start))]
        bodies.append(json.dumps({"reports": reports}).encode())
    return bodies


def client_process(port: int, key: str, bodies: list[bytes], start: float, max_seconds: float, out) -> None:
    "Post every body (one connection, reconnecting when the server closes it); report counts and latencies"
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    accepted, failures, latencies = 0, 0, []
    while time.time() < start:
        time.sleep(0.0005)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for body in bodies:
        if time.time() - start > max_seconds:
            break
        sent = time.perf_counter()
        try:
            connection.request("POST", "/v1/reports", body, headers)
            response = connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            failures += 1
            continue
        latencies.append(time.perf_counter() - sent)
        if response.status == 200:
            accepted += json.loads(data)["accepted"]
        else:
            failures += 1
        if response.getheader("Connection", "").lower() == "close":
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    out.put((accepted, failures, latencies, time.time()))


def session_cpu_seconds(session: int) -> float:
    "User + system CPU seconds of the live processes of a process group (the server and its workers; Linux)"
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == session:  # pgrp; then utime and stime are fields 14 and 15 of stat(5)
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def run_load(ports: list[int], key: str, bodies: list[bytes], clients: int, max_seconds: float) -> dict:
    queue: multiprocessing.Queue = multiprocessing.Queue()
    start = time.time() + 0.5
    shares = [bodies[i::clients] for i in range(clients)]
    processes = [multiprocessing.Process(target=client_process,
                                         args=(ports[i % len(ports)], key, share, start, max_seconds, queue))
                 for i, share in enumerate(shares)]
    for process in processes:
        process.start()
    results = [queue.get(timeout=max_seconds + 120) for _ in processes]
    for process in processes:
        process.join()
    accepted = sum(r[0] for r in results)
    failures = sum(r[1] for r in results)
    latencies = sorted(x for r in results for x in r[2])
    elapsed = max(r[3] for r in results) - start
    return {"accepted": accepted, "failures": failures, "requests": len(latencies), "seconds": elapsed,
            "reports_per_second": accepted / elapsed, "p50_ms": 1000 * latencies[len(latencies) // 2],
            "p99_ms": 1000 * latencies[int(len(latencies) * 0.99)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--clients", type=int, default=4, help="concurrent client processes")
    parser.add_argument("--max-seconds", type=float, default=30.0, help="time limit of each run")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the number of reports per run")
    parser.add_argument("--domain-size", type=int, default=len(SPEC["domain"]), help="OUE domain size d")
    parser.add_argument("--batches", type=int, nargs="+", default=None, choices=[batch for batch, _ in RUNS],
                        help="only these batch sizes")
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite", help="storage backend")
    parser.add_argument("--db-url", default="", help="postgresql:// URL of an empty database (default: a "
                        "throwaway cluster from the PostgreSQL server binaries)")
    parser.add_argument("--servers", type=int, default=1, help="serve processes on separate ports (PostgreSQL)")
    parser.add_argument("--source", type=Path, default=REPO,
                        help="checkout whose collector serves (e.g. the previous release, for before/after)")
    args = parser.parse_args()
    if args.servers > 1 and args.backend != "postgresql":
        parser.error("--servers > 1 needs --backend postgresql (one SQLite file belongs to one host)")

    import client_sdk
    from collector.storage import open_storage

    bench_spec = {**SPEC, "domain": [f"v{i}" for i in range(args.domain_size)]}
    spec = client_sdk.load_spec(bench_spec)
    directory = Path(tempfile.mkdtemp(prefix="ldp-bench-"))
    cluster = None
    db_path: Path | str = directory / "collector.db"
    if args.backend == "postgresql":
        if args.db_url:
            db_path = args.db_url
        else:
            from tests.collector.pg_cluster import PostgresCluster

            cluster = PostgresCluster(durable=True)
            db_path = cluster.create_database("bench")
    with open_storage(db_path) as storage:
        storage.migrate()
        key, _ = storage.create_key("ingest", "2024-01-01")
        storage.create_campaign(bench_spec, "2024-01-01")
    runs = [(batch, max(batch, int(total * args.scale))) for batch, total in RUNS
            if args.batches is None or batch in args.batches]
    prepared = {batch: prepare_bodies(spec, batch, total) for batch, total in runs}

    ports = [free_port() for _ in range(args.servers)]
    servers = [subprocess.Popen(
        [sys.executable, "-c", "from ldp_telemetry.cli import main; main()", "serve", "--db", str(db_path),
         "--host", "127.0.0.1", "--port", str(port), "--workers", str(args.workers), "--rate-limit", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, cwd=args.source.resolve())
        for port in ports]
    try:
        deadline = time.time() + 30
        for port, server in zip(ports, servers):
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1):
                        break
                except OSError:
                    if time.time() > deadline or server.poll() is not None:
                        raise SystemExit("the collector did not start") from None
                    time.sleep(0.1)
        rows = []
        for batch, _ in runs:
            cpu = sum(session_cpu_seconds(server.pid) for server in servers)
            result = run_load(ports, key, prepared[batch], args.clients, args.max_seconds)
            result["server_cpu_s"] = sum(session_cpu_seconds(server.pid) for server in servers) - cpu
            rows.append((batch, result))
        with open_storage(db_path) as storage:
            stored = storage.count_reports()
            rows_stored = storage.row_count("reports")
    finally:
        for server in servers:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(directory, ignore_errors=True)

    print(f"collector load: {args.backend}, {args.servers} serve process(es) x {args.workers} gunicorn workers, "
          f"{args.clients} client processes, {os.cpu_count()} CPUs, OUE d={args.domain_size}, loopback")
    print(f"{'batch':>6} {'requests':>9} {'accepted':>9} {'failed':>7} {'seconds':>8} {'reports/s':>10} "
          f"{'p50 ms':>8} {'p99 ms':>8} {'server CPU us/report':>21}")
    for batch, r in rows:
        print(f"{batch:>6} {r['requests']:>9} {r['accepted']:>9} {r['failures']:>7} {r['seconds']:>8.2f} "
              f"{r['reports_per_second']:>10,.0f} {r['p50_ms']:>8.1f} {r['p99_ms']:>8.1f} "
              f"{1e6 * r['server_cpu_s'] / max(1, r['accepted']):>21.1f}")
    print(f"reports counted by the aggregates: {stored}; rows stored: {rows_stored}")


if __name__ == "__main__":
    main()
