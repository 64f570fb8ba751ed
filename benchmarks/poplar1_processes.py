"""The poplar1 walk of one batch through a real leader and helper (``serve --role leader`` / ``--role helper`` on
loopback, SQLite files in a temporary directory): N devices' reports (Zipf-distributed strings, sealed by the
Python SDK) uploaded to the leader, then ``POST /v1/campaigns/<name>/walk``; prints the upload and walk times
and the heavy hitters found against the planted counts.

    python benchmarks/poplar1_processes.py --devices 10000 --bits 32 --stride 4 --threshold 0.01
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import requests  # noqa: E402

import client_sdk  # noqa: E402
from client_sdk.distributed import seal_report  # noqa: E402
from client_sdk.vdaf.hpke import HpkeConfig  # noqa: E402
from tests.collector.distributed.test_e2e_devices import aggregators  # noqa: E402

MAX_BODY = 256 << 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=int, default=10_000)
    parser.add_argument("--bits", type=int, default=32)
    parser.add_argument("--stride", type=int, default=4)
    parser.add_argument("--threshold", type=float, default=0.01)
    parser.add_argument("--zipf", type=float, default=1.1)
    parser.add_argument("--domain", type=int, default=1 << 16)
    args = parser.parse_args()
    source = {"name": "walk", "kind": "poplar1", "trust": "distributed", "epsilon": 1.0, "delta": 1e-6,
              "bits": args.bits, "stride": args.stride, "threshold": args.threshold, "min_batch": 100}
    rng = random.Random(1)
    weights = [1 / (rank + 1) ** args.zipf for rank in range(args.domain)]
    ranks = rng.choices(range(args.domain), weights, k=args.devices)
    values = [f"{rank:0{args.bits // 8}x}"[-(args.bits // 8):] for rank in ranks]
    # a level is one peer request with every report of the batch: the body limit and the leader's wait for the
    # helper raised to fit 10,000 reports (about 1.5 KB each at 32 bits)
    os.environ["LDP_PEER_TIMEOUT"] = "3600"
    with tempfile.TemporaryDirectory() as tmp, aggregators(Path(tmp), extra=("--max-body-bytes",
                                                                              str(MAX_BODY))) as servers:
        spec = client_sdk.load_spec(servers.call("POST", "/v1/campaigns", source)["spec"])
        listed = servers.call("GET", "/v1/campaigns/walk", key=servers.ingest)["aggregators"]
        leader = HpkeConfig.from_dict(listed["leader"]["hpke_config"])
        helper = HpkeConfig.from_dict(listed["helper"]["hpke_config"])
        started = time.perf_counter()
        for start in range(0, len(values), 1000):
            reports = []
            for value in values[start:start + 1000]:
                report_id = str(uuid.uuid4())
                reports.append({"report_id": report_id, "campaign": "walk", "fingerprint": spec.fingerprint,
                                "payload": seal_report(spec, value, leader, helper, report_id=report_id,
                                                       batch=servers.day)})
            servers.call("POST", "/v1/reports", {"reports": reports}, key=servers.ingest)
        uploaded = time.perf_counter() - started
        print(f"seal+upload {uploaded:.1f} s", flush=True)
        started = time.perf_counter()
        answer = requests.post(servers.leader_url + "/v1/campaigns/walk/walk", json={"batch": servers.day},
                               headers={"Authorization": f"Bearer {servers.admin}"}, timeout=3600)
        assert answer.ok, (answer.status_code, answer.text[:2000])
        release = answer.json()
        walked = time.perf_counter() - started
    truth = Counter(values)
    planted = {value: count for value, count in truth.items() if count >= args.threshold * args.devices}
    found = {row["value"]: row for row in release["estimate"]["heavy_hitters"]}
    covered = sum(1 for value, count in planted.items()
                  if value in found and found[value]["ci_low"] <= count <= found[value]["ci_high"])
    levels = release["walk"]["levels"]
    print(f"devices {args.devices}, bits {args.bits}, stride {args.stride}, threshold {args.threshold}: "
          f"seal+upload {uploaded:.1f} s, walk {walked:.1f} s ({len(levels)} levels, "
          f"{sum(len(level['prefixes']) for level in levels)} candidates); {len(planted)} above threshold, "
          f"{len(set(planted) & set(found))} found, {covered} covered; {len(found)} released, "
          f"{sum(row['clears_threshold'] for row in found.values())} clearing the threshold")


if __name__ == "__main__":
    main()
