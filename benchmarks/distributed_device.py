"""Distributed campaigns on the device: the cost of sealing one report (Prio3 shard + HPKE for both aggregators),
the leader's cost of opening its share, ``Client.record`` end to end (seal, ledger, SQLite queue) and the bytes a
report takes on the wire.

    python benchmarks/distributed_device.py            # about a minute on the project VM
    python benchmarks/distributed_device.py --quick    # fewer reports, for a smoke run

Times are CPU milliseconds of this process per report (``time.process_time``), best of ``--repeat`` runs.
"JSON B" is the report as the SDK queues and sends it (envelope with report_id, campaign, fingerprint and the
base64url payload), before the request's optional gzip; "raw B" is the nonce, public share and both sealed shares
as bytes (HPKE adds 32 bytes of encapsulated key and a 16-byte tag per share).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import client_sdk  # noqa: E402
from client_sdk import Client, ReportPolicy  # noqa: E402
from client_sdk.distributed import LEADER, open_input_share, parse_payload, seal_report  # noqa: E402
from client_sdk.runtime.transport import MockTransport, Request, Response  # noqa: E402
from client_sdk.vdaf.hpke import HpkeKeyPair  # noqa: E402

CAMPAIGNS = {
    "Count": {"prio3": "count", "noise": "laplace"},
    "Sum(255)": {"prio3": "sum", "max_measurement": 255, "noise": "laplace"},
    "Histogram(16)": {"prio3": "histogram", "domain": [f"v{i}" for i in range(16)], "noise": "gaussian"},
    "Histogram(16), 1 coin": {"prio3": "histogram", "domain": [f"v{i}" for i in range(16)], "noise": "coins"},
    "Histogram(1024)": {"prio3": "histogram", "domain": [f"v{i}" for i in range(1024)], "noise": "gaussian"},
}
VALUES = {"Count": True, "Sum(255)": 200, "Histogram(16)": "v3", "Histogram(16), 1 coin": "v3",
          "Histogram(1024)": "v700"}


def spec_for(label: str) -> client_sdk.Spec:
    return client_sdk.load_spec({"name": "bench", "trust": "distributed", "epsilon": 1.0, "delta": 1e-6,
                                 **CAMPAIGNS[label]})


def best(repeat: int, run) -> float:
    return min(run() for _ in range(repeat))


def per_report(count: int, step) -> float:
    start = time.process_time()
    for _ in range(count):
        step()
    return (time.process_time() - start) / count * 1000


def record_ms(spec: client_sdk.Spec, value: object, keys, count: int) -> float:
    "Client.record per report: seal, ask and charge the ledger, insert into the SQLite queue (no upload)"
    aggregators = {"leader": {"hpke_config": keys[0].config.to_dict()},
                   "helper": {"url": "https://helper.test", "hpke_config": keys[1].config.to_dict()}}

    def leader(request: Request) -> Response:
        item = {"name": spec.name, "version": 1, "fingerprint": spec.fingerprint, "spec": spec.to_dict(),
                "aggregators": aggregators}
        return Response.from_json(200, {"campaigns": [item]})

    with tempfile.TemporaryDirectory() as state:
        client = Client("https://leader.test", "key", state, transport=MockTransport(leader), background=False,
                        campaigns=[spec.name], policy=ReportPolicy.unlimited(), jitter=random.Random(1),
                        aggregators={"helper": {"url": "https://helper.test", "hpke_config": keys[1].config}},
                        queue_limits=client_sdk.QueueLimits(max_reports=count + 1, max_bytes=1 << 31))
        client.record(spec.name, value)  # the first record builds the Prio3 instance
        elapsed = per_report(count, lambda: client.record(spec.name, value))
        client.close(timeout=0)
    return elapsed


def measure(label: str, keys, count: int, repeat: int) -> str:
    "One row of the table"
    from client_sdk.vdaf.hpke import seal as hpke_seal

    spec, value = spec_for(label), VALUES[label]
    report_id = str(uuid.uuid4())
    payload = seal_report(spec, value, keys[0].config, keys[1].config, report_id=report_id)
    envelope = {"report_id": report_id, "campaign": spec.name, "fingerprint": spec.fingerprint, "payload": payload}
    size = len(json.dumps(envelope, separators=(",", ":")))
    parsed = parse_payload(payload)
    raw = 16 + len(parsed.public_share) + len(parsed.leader_ciphertext) + len(parsed.helper_ciphertext)
    plaintexts = bytes(len(parsed.leader_ciphertext) - 48), bytes(len(parsed.helper_ciphertext) - 48)

    def seal() -> None:
        seal_report(spec, value, keys[0].config, keys[1].config, report_id=str(uuid.uuid4()))

    def hpke_only() -> None:
        hpke_seal(keys[0].config, plaintexts[0], b"info")
        hpke_seal(keys[1].config, plaintexts[1], b"info")

    def leader_open() -> None:
        open_input_share(spec, keys[0], LEADER, report_id, parsed.public_share, parsed.leader_ciphertext)

    sealing, hpke, opening = (best(repeat, lambda step=step: per_report(count, step))
                              for step in (seal, hpke_only, leader_open))
    recorded = best(repeat, lambda: record_ms(spec, value, keys, count))
    return f"| {label} | {size:,} | {raw:,} | {sealing:.3f} | {hpke:.3f} | {opening:.3f} | {recorded:.3f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    keys = (HpkeKeyPair.generate(1), HpkeKeyPair.generate(2))
    print("| campaign | JSON B | raw B | seal ms | of which HPKE ms | leader open ms | Client.record ms |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for label in CAMPAIGNS:
        count = 20 if args.quick else (100 if "1024" in label else 400)
        print(measure(label, keys, count, args.repeat))


if __name__ == "__main__":
    main()
