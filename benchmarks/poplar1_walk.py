"""The poplar1 walk of one batch in one process: N devices' sealed reports (Zipf-distributed strings), then a
leader and a helper (``collector.kinds.poplar1``) walk every level; prints the seal time, the walk time and the
heavy hitters found against the planted counts.

    python benchmarks/poplar1_walk.py --devices 1000 --bits 32 --stride 4 --threshold 0.01
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from client_sdk import distributed  # noqa: E402
from client_sdk.distributed_messages import parse_payload  # noqa: E402
from client_sdk.spec import Spec  # noqa: E402
from client_sdk.vdaf.hpke import HpkeKeyPair, open_sealed  # noqa: E402
from collector.kinds.poplar1 import Poplar1Aggregator  # noqa: E402
from collector.kinds.poplar1.walk import walk  # noqa: E402
from estimators.kinds.poplar1 import estimate_walk  # noqa: E402

BATCH = "2026-12-02"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", type=int, default=1000)
    parser.add_argument("--bits", type=int, default=32)
    parser.add_argument("--stride", type=int, default=4)
    parser.add_argument("--threshold", type=float, default=0.01)
    parser.add_argument("--zipf", type=float, default=1.1)
    parser.add_argument("--domain", type=int, default=1 << 16)
    args = parser.parse_args()
    spec = Spec.from_dict({"name": "walk", "kind": "poplar1", "trust": "distributed", "epsilon": 1.0,
                           "delta": 1e-6, "bits": args.bits, "stride": args.stride, "threshold": args.threshold,
                           "min_batch": 100})
    rng = random.Random(1)
    weights = [1 / (rank + 1) ** args.zipf for rank in range(args.domain)]
    ranks = rng.choices(range(args.domain), weights, k=args.devices)
    values = [f"{rank:0{args.bits // 8}x}"[-(args.bits // 8):].encode() for rank in ranks]
    leader_keys, helper_keys = HpkeKeyPair.generate(1), HpkeKeyPair.generate(2)
    started = time.perf_counter()
    reports = []
    for value in values:
        report_id = str(uuid.uuid4())
        payload = parse_payload(distributed.seal_report(spec, value, leader_keys.config, helper_keys.config,
                                                        report_id=report_id, batch=BATCH))
        reports.append((uuid.UUID(report_id).bytes, payload.public_share, payload.leader_ciphertext,
                        payload.helper_ciphertext))
    sealed = time.perf_counter() - started

    def opener(keys: HpkeKeyPair, role: int):
        def open_share(report_id: bytes, public: bytes, ciphertext: bytes) -> bytes:
            info = distributed.input_share_info(spec, str(uuid.UUID(bytes=report_id)), role, public, BATCH)
            return open_sealed(keys, ciphertext, info)
        return open_share

    verify_key = os.urandom(32)
    leader = Poplar1Aggregator(spec, verify_key, 0, opener(leader_keys, distributed.LEADER))
    helper = Poplar1Aggregator(spec, verify_key, 1, opener(helper_keys, distributed.HELPER))
    started = time.perf_counter()
    release = walk(leader, helper, BATCH, reports)
    walked = time.perf_counter() - started
    result = estimate_walk(spec, release.to_dict())
    truth = Counter(values)
    planted = {value.decode(): count for value, count in truth.items() if count >= args.threshold * args.devices}
    found = {row["value"]: row for row in result["heavy_hitters"]}
    covered = sum(1 for value, count in planted.items()
                  if value in found and found[value]["ci_low"] <= count <= found[value]["ci_high"])
    print(f"devices {args.devices}, bits {args.bits}, stride {args.stride}, threshold {args.threshold}: "
          f"seal {sealed:.1f} s, walk {walked:.1f} s ({len(release.levels)} levels, "
          f"{sum(len(level.prefixes) for level in release.levels)} candidates); "
          f"{len(planted)} above threshold, {len(set(planted) & set(found))} found, {covered} covered; "
          f"{len(found)} released, {sum(row['clears_threshold'] for row in found.values())} clearing the "
          f"threshold")


if __name__ == "__main__":
    main()
