"""Distributed campaigns, leader and helper on this machine: upload and aggregation throughput, bytes per report.

    python benchmarks/distributed_throughput.py            # Histogram(16) and Histogram(1024), 2,000 and 400 reports
    python benchmarks/distributed_throughput.py --quick    # 200 and 50 reports, for a smoke run
    python benchmarks/distributed_throughput.py --backend both               # SQLite and PostgreSQL side by side
    python benchmarks/distributed_throughput.py --db postgresql://u@host/db  # the same, on that server

For each histogram the script starts a helper and a leader (``ldp-telemetry serve --role helper|leader``, one
worker each, their own databases: SQLite files, or two PostgreSQL databases of a throwaway cluster with fsync on or
of ``--db``'s server; the leader's aggregation driver off) on 127.0.0.1, creates a distributed
campaign on the leader (which provisions the helper), then measures:

* device      reports/s of ``client_sdk.distributed.seal_report`` in this process: Prio3 shard with the proof and
              HPKE seal of both input shares (CPU of one core; the device's own cost)
* upload      reports/s of ``POST /v1/reports`` to the leader in batches of ``--batch`` (4 client threads): check,
              HPKE open and decode of the leader's share, one transaction per batch
* aggregate   reports/s of one round of the leader's pending work (``run_pending``, what ``ldp-telemetry run-jobs``
              runs, here in this process): aggregation jobs leader -> helper over HTTP, both aggregators opening
              their shares, batch-verifying (``collector.vdaf_batch``) and adding the output shares
* bytes       per report: the JSON envelope as uploaded (report id, campaign, fingerprint, base64url payload), and
              the binary Prio3 + HPKE part (public share + both sealed shares)

* CPU         ms per report of upload and aggregation, and where it goes (HPKE open, decode/verify, store, the
              rest): the servers' CPU from /proc, split by a run of the same step in this process under a CPU-time
              profiler (self time of each function, by the file it is in)

Times are wall clock on a shared 2-core VM with both servers, the client and the aggregation on it: compare only
figures of the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.collector_load import session_cpu_seconds  # noqa: E402
from client_sdk import load_spec  # noqa: E402
from client_sdk.distributed import seal_report  # noqa: E402
from client_sdk.vdaf.hpke import HpkeConfig, from_b64url  # noqa: E402
from tests.collector.helpers import create_key, free_port, ldp_command, stop, wait_ready  # noqa: E402

PEER_TOKEN = "benchmark-peer-token"


def request(method: str, url: str, token: str | None, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    with urllib.request.urlopen(urllib.request.Request(url, data=data, method=method, headers=headers),
                                timeout=600) as response:
        return json.loads(response.read() or b"null")


def start(role: str, db: Path, port: int, log: Path, *extra: str) -> subprocess.Popen:
    command = ldp_command("serve", "--db", str(db), "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
                          "--rate-limit", "0", "--role", role, "--peer-token", PEER_TOKEN, *extra)
    with open(log, "ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    wait_ready(f"http://127.0.0.1:{port}", process, timeout=60)
    return process


def postgres_cpu(server: Any) -> float | None:
    """CPU seconds of a throwaway cluster's server so far: the postmaster, its live backends, and (``cutime``) the
    backends that have exited; None for a server this benchmark did not start"""
    data = getattr(server, "data", None)
    if data is None:
        return None
    postmaster = int((Path(data) / "postmaster.pid").read_text().split()[0])
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # state, ppid, pgrp, ...; utime is fields[11]
        except OSError:
            continue
        own = int(stat.parent.name) == postmaster
        if own or int(fields[1]) == postmaster:
            total += sum(int(value) for value in fields[11:15 if own else 13])  # the postmaster's: + cutime, cstime
    return total / os.sysconf("SC_CLK_TCK")


CATEGORIES = (  # self time of a function, by the file it is in (first match)
    ("hpke", ("vdaf/hpke.py", "cryptography")),
    ("vdaf", ("client_sdk/vdaf", "vdaf_batch.py", "distributed/aggregation.py")),
    ("store", ("collector/storage", "distributed/store.py", "psycopg", "sqlite3", "'execute", "'commit",
               "'fetch", "executemany")),
    ("http+json", ("json", "http/client.py", "urllib", "socket", "peer.py")),
)


def shares(split: dict[str, float], total: float) -> dict[str, float]:
    "The profiled split scaled to ``total`` (the CPU of the step without the profiler)"
    profiled = sum(split.values()) or 1.0
    return {name: value * total / profiled for name, value in split.items()}


def cpu_split(run: Any) -> tuple[Any, dict[str, float]]:
    "run() under a CPU-time profiler; (its result, CPU seconds by category: self time of the functions in each)"
    import cProfile
    import pstats

    profile = cProfile.Profile(time.process_time)
    result = profile.runcall(run)
    split = dict.fromkeys([name for name, _ in CATEGORIES] + ["other"], 0.0)
    for (filename, _, function), row in pstats.Stats(profile).stats.items():  # type: ignore[attr-defined]
        where = f"{filename} {function}"
        name = next((name for name, marks in CATEGORIES if any(mark in where for mark in marks)), "other")
        split[name] += row[2]
    return result, split


def leader_store(leader_db: str) -> Any:
    from collector.distributed.store import DistStore
    from collector.storage import open_storage

    storage = open_storage(leader_db)
    storage.migrate()
    return storage, DistStore(storage)


def aggregate_in_process(leader_db: str, helper_url: str) -> dict:
    "What ``ldp-telemetry run-jobs`` does, without its interpreter start-up: every pending job once"
    from collector.distributed.leader import run_pending
    from collector.distributed.peer import PeerClient

    storage, store = leader_store(leader_db)
    with storage:
        return run_pending(storage, store, PeerClient.for_url(helper_url, PEER_TOKEN)).to_dict()


def upload_in_process(leader_db: str, reports: list[dict]) -> int:
    "The leader's part of POST /v1/reports after the request is parsed: check, open, decode, store"
    from collector.auth import utc_today
    from collector.distributed.leader import accept_reports

    storage, store = leader_store(leader_db)
    with storage:
        campaign = storage.get_campaign(reports[0]["campaign"])
        items = [(index, report, campaign) for index, report in enumerate(reports)]
        return sum(accept_reports(store, items[i:i + 100], utc_today()).accepted for i in range(0, len(items), 100))


def databases(backend: str, server: Any, name: str, folder: Path) -> tuple[str, str]:
    "(leader, helper) database: SQLite files, or two new databases on the PostgreSQL server"
    if backend == "sqlite":
        return str(folder / f"leader-{name}.db"), str(folder / f"helper-{name}.db")
    return server.create_database(f"leader_{name}"), server.create_database(f"helper_{name}")


def seal(spec: Any, aggregators: dict, values: list[str]) -> list[dict]:
    leader_config = HpkeConfig.from_dict(aggregators["leader"]["hpke_config"])
    helper_config = HpkeConfig.from_dict(aggregators["helper"]["hpke_config"])
    reports = []
    for value in values:
        report_id = str(uuid.uuid4())
        reports.append({"report_id": report_id, "campaign": spec.name, "fingerprint": spec.fingerprint,
                        "payload": seal_report(spec, value, leader_config, helper_config, report_id=report_id)})
    return reports


def run_one(backend: str, server: Any, buckets: int, count: int, batch: int, folder: Path) -> dict[str, Any]:
    leader_db, helper_db = databases(backend, server, f"{backend[:2]}{buckets}", folder)
    helper_port, leader_port = free_port(), free_port()
    processes = []
    try:
        processes.append(start("helper", helper_db, helper_port, folder / "helper.log"))
        helper_url = f"http://127.0.0.1:{helper_port}"
        admin = create_key(leader_db, "admin")
        ingest = create_key(leader_db, "ingest")
        processes.append(start("leader", leader_db, leader_port, folder / "leader.log", "--helper-url", helper_url,
                               "--aggregate-interval", "0"))
        leader_url = f"http://127.0.0.1:{leader_port}"
        spec_json = {"name": f"hist{buckets}", "trust": "distributed", "prio3": "histogram",
                     "domain": [f"v{i}" for i in range(buckets)], "epsilon": 1.0, "delta": 1e-6,
                     "noise": "gaussian", "min_batch": 2}
        created = request("POST", leader_url + "/v1/campaigns", admin, spec_json)
        spec = load_spec(created["spec"])
        values = [spec_json["domain"][i % buckets] for i in range(count)]
        started = time.perf_counter()
        reports = seal(spec, created["aggregators"], values)
        device = count / (time.perf_counter() - started)
        profiled = seal(spec, created["aggregators"], values[:max(count // 4, 40)])
        json_bytes = sum(len(json.dumps(r, separators=(",", ":"))) for r in reports) / count
        payload = reports[0]["payload"]
        binary = (len(from_b64url(payload["public_share"], "public_share"))
                  + sum(len(from_b64url(payload[s]["ciphertext"], s)) for s in ("leader_share", "helper_share")))

        chunks = [reports[i:i + batch] for i in range(0, count, batch)]
        database_cpu = postgres_cpu(server) if backend == "postgresql" else None
        leader_cpu, started = session_cpu_seconds(processes[1].pid), time.perf_counter()
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda chunk: request("POST", leader_url + "/v1/reports", ingest,
                                                          {"reports": chunk}), chunks))
        upload = count / (time.perf_counter() - started)
        upload_cpu = (session_cpu_seconds(processes[1].pid) - leader_cpu) / count
        upload_db = None if database_cpu is None else (postgres_cpu(server) - database_cpu) / count  # type: ignore
        accepted = sum(int(a.get("accepted", 0)) for a in answers)
        if accepted < count:
            print(f"warning: {count - accepted} reports not accepted: {answers[0]}", file=sys.stderr)

        database_cpu = postgres_cpu(server) if backend == "postgresql" else None
        helper_cpu, own_cpu, started = session_cpu_seconds(processes[0].pid), time.process_time(), time.perf_counter()
        summary = aggregate_in_process(leader_db, helper_url)
        seconds = time.perf_counter() - started
        leader_cpu = (time.process_time() - own_cpu) / accepted
        helper_only = (session_cpu_seconds(processes[0].pid) - helper_cpu) / accepted
        aggregate_cpu = leader_cpu + helper_only
        aggregate_db = None if database_cpu is None else (postgres_cpu(server) - database_cpu) / accepted  # type: ignore

        # where the CPU goes: the same steps in this process, once plain (its CPU) and once under a CPU profiler (the
        # shares of that CPU: profiling slows every function call, so only its proportions are used)
        warm, plain, traced = profiled[:10], profiled[10:10 + len(profiled) // 2], profiled[10 + len(profiled) // 2:]
        upload_in_process(leader_db, warm)  # imports, caches, the first connection: not per-report costs
        own_cpu = time.process_time()
        upload_in_process(leader_db, plain)
        step_cpu = (time.process_time() - own_cpu) / len(plain)
        _, upload_split = cpu_split(lambda: upload_in_process(leader_db, traced))
        _, leader_split = cpu_split(lambda: aggregate_in_process(leader_db, helper_url))
        return {"device": device, "upload": upload, "aggregate": accepted / seconds, "accepted": accepted,
                "json_bytes": json_bytes, "binary_bytes": binary, "summary": summary, "upload_cpu": upload_cpu,
                "aggregate_cpu": aggregate_cpu, "upload_step_cpu": step_cpu,
                "upload_split": shares(upload_split, step_cpu), "leader_split": shares(leader_split, leader_cpu),
                "helper_cpu": helper_only, "upload_db": upload_db, "aggregate_db": aggregate_db}
    finally:
        for process in reversed(processes):
            stop(process)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--batch", type=int, default=100, help="reports per POST")
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="sqlite")
    parser.add_argument("--db", default=None, metavar="URL",
                        help="a PostgreSQL server (postgresql://...) where the benchmark may create databases; "
                             "implies --backend both [default: a throwaway cluster with fsync on]")
    args = parser.parse_args()
    backends = ["sqlite", "postgresql"] if args.db or args.backend == "both" else [args.backend]
    plan = [(16, 200), (1024, 50)] if args.quick else [(16, 2_000), (1024, 400)]
    print(f"{os.cpu_count()} CPUs; leader and helper: one gunicorn worker each; POST batches of {args.batch}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp, postgres_server(args.db if "postgresql" in backends else None,
                                                               "postgresql" in backends) as server:
        for buckets, count in plan:
            for backend in backends:
                rows.append((buckets, backend, run_one(backend, server, buckets, count, args.batch, Path(tmp))))
    print("\n| histogram | backend | reports | device shard+seal (reports/s) | upload to leader (reports/s) | "
          "aggregation, both aggregators (reports/s) | bytes per report (JSON / binary) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for buckets, backend, row in rows:
        print(f"| Histogram({buckets}) | {backend} | {row['accepted']:,} | {row['device']:,.0f} | "
              f"{row['upload']:,.0f} | {row['aggregate']:,.0f} | {row['json_bytes']:,.0f} / {row['binary_bytes']:,} |")
    print("\nCPU ms per report.  Upload: the leader server's CPU (all of it), split by a profiled in-process run of "
          "its check/open/decode/store step (HTTP + JSON + Flask = the rest).  Aggregation: the leader's side "
          "(profiled) and the helper server's CPU.  PostgreSQL server: its own CPU (both databases), apart; SQLite's "
          "is in the processes' (store).")
    print("\n| histogram | backend | upload total | HPKE open | decode | store | HTTP, JSON, other | "
          "aggregation total | leader: verify | leader: store | leader: HTTP, JSON, other | helper | "
          "PostgreSQL server: upload / aggregation |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for buckets, backend, row in rows:
        up, lead = row["upload_split"], row["leader_split"]
        rest = row["upload_cpu"] - up["hpke"] - up["vdaf"] - up["store"]  # HTTP, JSON, Flask and the step's rest
        print(f"| Histogram({buckets}) | {backend} | {ms(row['upload_cpu'])} | {ms(up['hpke'])} | {ms(up['vdaf'])} | "
              f"{ms(up['store'])} | {ms(rest)} | {ms(row['aggregate_cpu'])} | {ms(lead['vdaf'] + lead['hpke'])} | "
              f"{ms(lead['store'])} | {ms(lead['http+json'] + lead['other'])} | {ms(row['helper_cpu'])} | "
              + (f"{ms(row['upload_db'])} / {ms(row['aggregate_db'])} |" if row["upload_db"] is not None else "- |"))


@contextmanager
def postgres_server(url: str | None, needed: bool) -> Iterator[Any]:
    "Something with create_database(prefix) -> URL: the given server, or a throwaway cluster (fsync on)"
    if not needed:
        yield None
        return
    if url is not None:
        yield GivenServer(url)
        return
    from tests.collector.pg_cluster import PostgresCluster

    cluster = PostgresCluster(durable=True)
    try:
        yield cluster
    finally:
        from collector.storage.postgres import close_pools

        close_pools()
        cluster.stop()


class GivenServer:
    "Databases created on an existing PostgreSQL server (the URL's user needs CREATEDB)"

    def __init__(self, url: str) -> None:
        self.url = url

    def create_database(self, prefix: str) -> str:
        import psycopg

        name = f"ldp_bench_{prefix}_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url.rsplit("/", 1)[0] + "/" + name


if __name__ == "__main__":
    main()
