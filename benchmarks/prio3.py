"""Prio3 (draft-irtf-cfrg-vdaf-20): device-side shard time, aggregator verification per report and in batches,
upload size, and cost against the histogram length.

    python benchmarks/prio3.py            # about two minutes on the project VM
    python benchmarks/prio3.py --quick    # fewer reports, for a smoke run

Times are CPU seconds of this process (``time.process_time``) per report, so they are per core and not inflated by
other processes on a shared machine; each figure is the best of ``--repeat`` runs over the same reports.  "verify"
always covers both aggregators (verify_init on each share, the verifier message and verify_next), as the reference
figures do; "batch" runs ``collector.vdaf_batch.batch_verify`` on the whole batch.  Reports are sharded with fresh
randomness, encoded and decoded as on the wire.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from client_sdk.vdaf import Prio3, prio3_count, prio3_histogram, prio3_sum  # noqa: E402
from collector.vdaf_batch import batch_verify  # noqa: E402

CTX = b"benchmark"
KEY = bytes(range(32))

# the draft's reference Python implementation on this VM, per report: (shard ms, verify both aggregators ms)
REFERENCE = {
    "Count": (0.81, 1.71),
    "Sum(255)": (1.71, 8.93),
    "Histogram(64, 8)": (21.9, 12.3),
    "Histogram(1024, 32)": (214.0, 141.0),
}


def cpu() -> float:
    return time.process_time()


def make_reports(vdaf: Prio3, measurement: object, count: int):
    nonces, publics, shares = [], [], []
    start = cpu()
    for _ in range(count):
        nonce = os.urandom(16)
        public, input_shares = vdaf.shard(CTX, measurement, nonce)
        nonces.append(nonce)
        publics.append(vdaf.encode_public_share(public))
        shares.append([vdaf.encode_input_share(s) for s in input_shares])
    shard_seconds = (cpu() - start) / count
    return nonces, publics, shares, shard_seconds


def verify_one_by_one(vdaf: Prio3, nonces, publics, shares) -> float:
    start = cpu()
    for nonce, public, encoded in zip(nonces, publics, shares):
        pairs = [vdaf.verify_init(KEY, CTX, agg_id, nonce, vdaf.decode_public_share(public),
                                  vdaf.decode_input_share(agg_id, share)) for agg_id, share in enumerate(encoded)]
        message = vdaf.verifier_shares_to_message(CTX, [v for _, v in pairs])
        for state, _ in pairs:
            vdaf.verify_next(CTX, state, message)
    return (cpu() - start) / len(nonces)


def verify_batched(vdaf: Prio3, nonces, publics, shares) -> float:
    start = cpu()
    results = batch_verify(vdaf, KEY, CTX, nonces, publics, shares)
    elapsed = (cpu() - start) / len(nonces)
    if any(r is None for r in results):
        raise SystemExit("an honest report was rejected")
    return elapsed


def upload_bytes(publics, shares) -> int:
    "Nonce, public share and every input share of one report"
    return 16 + len(publics[0]) + sum(len(s) for s in shares[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Fewer reports per configuration (smoke run).")
    parser.add_argument("--repeat", type=int, default=3, help="Runs per figure; the best is printed.")
    args = parser.parse_args()
    repeat = max(1, args.repeat)
    scale = 0.2 if args.quick else 1.0

    configs = [
        ("Count", prio3_count(), 1, 1000),
        ("Sum(255)", prio3_sum(255), 200, 500),
        ("Histogram(64, 8)", prio3_histogram(64, 8), 17, 200),
        ("Histogram(1024, 32)", prio3_histogram(1024, 32), 700, 40),
    ]
    print("Per report, CPU ms (verify = both aggregators); reference = draft's Python implementation")
    print()
    print("| VDAF | upload B | shard ms | ref shard ms | verify ms | batch verify ms | batch reports/s/core "
          "| ref verify ms | batch speed-up |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for name, vdaf, measurement, count in configs:
        count = max(10, int(count * scale))
        nonces, publics, shares, shard_s = make_reports(vdaf, measurement, count)
        shard_s = min([shard_s] + [make_reports(vdaf, measurement, count)[3] for _ in range(repeat - 1)])
        single_s = min(verify_one_by_one(vdaf, nonces, publics, shares) for _ in range(repeat))
        batch_s = min(verify_batched(vdaf, nonces, publics, shares) for _ in range(repeat))
        ref_shard, ref_verify = REFERENCE[name]
        print(f"| {name} | {upload_bytes(publics, shares):,} | {shard_s * 1e3:.3f} | {ref_shard} | "
              f"{single_s * 1e3:.3f} | {batch_s * 1e3:.3f} | {1 / batch_s:,.0f} | {ref_verify} | "
              f"{ref_verify / (batch_s * 1e3):.1f}x |")

    print()
    print("Histogram cost against its length (chunk_length = sqrt(length))")
    print()
    print("| length | chunk | proof elements | upload B | shard ms | batch verify ms |")
    print("|--:|--:|--:|--:|--:|--:|")
    for length, count in ((64, 100), (256, 50), (1024, 20), (4096, 6)):
        count = max(4, int(count * scale))
        chunk = math.isqrt(length)
        vdaf = prio3_histogram(length, chunk)
        nonces, publics, shares, shard_s = make_reports(vdaf, length // 3, count)
        shard_s = min([shard_s] + [make_reports(vdaf, length // 3, count)[3] for _ in range(repeat - 1)])
        batch_s = min(verify_batched(vdaf, nonces, publics, shares) for _ in range(repeat))
        print(f"| {length} | {chunk} | {vdaf.flp.PROOF_LEN} | {upload_bytes(publics, shares):,} | "
              f"{shard_s * 1e3:.2f} | {batch_s * 1e3:.2f} |")


if __name__ == "__main__":
    main()
