"""Distributed campaigns, leader and helper on this machine: upload and aggregation throughput, bytes per report.

    python benchmarks/distributed_throughput.py            # Histogram(16) and Histogram(1024), 2,000 and 400 reports
    python benchmarks/distributed_throughput.py --quick    # 200 and 50 reports, for a smoke run

For each histogram the script starts a helper and a leader (``ldp-telemetry serve --role helper|leader``, one
worker each, their own SQLite files, the leader's aggregation driver off) on 127.0.0.1, creates a distributed
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

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


def aggregate_in_process(leader_db: Path, helper_url: str) -> dict:
    "What ``ldp-telemetry run-jobs`` does, without its interpreter start-up: every pending job once"
    from collector.distributed.leader import run_pending
    from collector.distributed.peer import PeerClient
    from collector.distributed.store import DistStore
    from collector.storage import open_storage

    storage = open_storage(leader_db)
    with storage:
        store = DistStore(storage)
        store.migrate()
        return run_pending(storage, store, PeerClient.for_url(helper_url, PEER_TOKEN)).to_dict()


def run_one(buckets: int, count: int, batch: int, folder: Path) -> dict[str, float]:
    helper_db, leader_db = folder / f"helper{buckets}.db", folder / f"leader{buckets}.db"
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
        aggregators = created["aggregators"]
        leader_config = HpkeConfig.from_dict(aggregators["leader"]["hpke_config"])
        helper_config = HpkeConfig.from_dict(aggregators["helper"]["hpke_config"])

        values = [spec_json["domain"][i % buckets] for i in range(count)]
        started = time.perf_counter()
        reports = []
        for value in values:
            report_id = str(uuid.uuid4())
            reports.append({"report_id": report_id, "campaign": spec.name, "fingerprint": spec.fingerprint,
                            "payload": seal_report(spec, value, leader_config, helper_config, report_id=report_id)})
        device = count / (time.perf_counter() - started)
        json_bytes = sum(len(json.dumps(r, separators=(",", ":"))) for r in reports) / count
        payload = reports[0]["payload"]
        binary = (len(from_b64url(payload["public_share"], "public_share"))
                  + sum(len(from_b64url(payload[s]["ciphertext"], s)) for s in ("leader_share", "helper_share")))

        chunks = [reports[i:i + batch] for i in range(0, count, batch)]
        started = time.perf_counter()
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda chunk: request("POST", leader_url + "/v1/reports", ingest,
                                                          {"reports": chunk}), chunks))
        upload = count / (time.perf_counter() - started)
        accepted = sum(int(a.get("accepted", 0)) for a in answers)
        if accepted < count:
            print(f"warning: {count - accepted} reports not accepted: {answers[0]}", file=sys.stderr)

        started = time.perf_counter()
        summary = aggregate_in_process(leader_db, helper_url)
        seconds = time.perf_counter() - started
        return {"device": device, "upload": upload, "aggregate": accepted / seconds, "accepted": accepted,
                "json_bytes": json_bytes, "binary_bytes": binary, "summary": summary}
    finally:
        for process in reversed(processes):
            stop(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--batch", type=int, default=100, help="reports per POST")
    args = parser.parse_args()
    plan = [(16, 200), (1024, 50)] if args.quick else [(16, 2_000), (1024, 400)]
    print(f"{os.cpu_count()} CPUs; leader and helper: one gunicorn worker each; POST batches of {args.batch}")
    print("| histogram | reports | device shard+seal (reports/s) | upload to leader (reports/s) | "
          "aggregation, both aggregators (reports/s) | bytes per report (JSON / binary) |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for buckets, count in plan:
            row = run_one(buckets, count, args.batch, Path(tmp))
            print(f"| Histogram({buckets}) | {row['accepted']:,} | {row['device']:,.0f} | {row['upload']:,.0f} | "
                  f"{row['aggregate']:,.0f} | {row['json_bytes']:,.0f} / {row['binary_bytes']:,} |", flush=True)


if __name__ == "__main__":
    main()
