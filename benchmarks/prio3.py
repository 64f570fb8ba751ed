"""Prio3 (draft-irtf-cfrg-vdaf-20): device-side shard time, aggregator verification per report and in batches,
upload size, and cost against the histogram length; with ``--reference DIR``, the draft's reference
implementation measured in the same run on the same measurements and the same reports.

    python benchmarks/prio3.py            # about two minutes on the project VM
    python benchmarks/prio3.py --quick    # fewer reports, for a smoke run
    python benchmarks/prio3.py --reference vdaf-ref --reference-python ref-venv/bin/python

Times are CPU seconds per report (``time.process_time`` of the process that does the work), so they are per core
and not inflated by other processes on a shared machine; each figure is the best of ``--repeat`` runs over the same
reports.  "verify" always covers both aggregators (verify_init on each share, the verifier message and
verify_next); "batch" runs ``collector.vdaf_batch.batch_verify`` on the whole batch.  Reports are sharded with
fresh randomness, encoded and decoded as on the wire.

The reference (``--reference``: a checkout of the draft's repository at the draft-20 tag, or its ``poc/``) runs in
its own interpreter (``--reference-python``, default ``python3.12`` on the PATH; it needs Python >= 3.12 and
pycryptodomex) through ``benchmarks/prio3_reference.py``.  Its runs alternate with ours, configuration by
configuration and run by run, so load on the machine affects both alike; it shards the same measurements and
verifies the very reports ours sharded (so the run also checks that it accepts them).  Ratios are the reference's
time over ours.  When the reference cannot run, its columns say so and no ratio is printed.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.vdaf_reference import CTX, ReferenceWorker  # noqa: E402
from client_sdk.vdaf import Prio3, prio3_count, prio3_histogram, prio3_sum  # noqa: E402
from collector.vdaf_batch import batch_verify  # noqa: E402

KEY = bytes(range(32))
WORKER = Path(__file__).with_name("prio3_reference.py")


class Reference(ReferenceWorker):
    "The draft's Prio3 (``prio3_reference.py``): CPU seconds per report of each request"

    def __init__(self, directory: str | None, python: str | None) -> None:
        super().__init__(WORKER, directory, python)

    def _ask(self, request: dict) -> float | None:
        "CPU seconds per report, or None (and ``problem`` set) when the reference failed"
        reply = self.ask(request)
        return None if reply is None else float(reply["seconds"])

    def shard(self, spec: list, measurement: object, count: int) -> float | None:
        return self._ask({"op": "shard", "vdaf": spec, "measurement": measurement, "count": count})

    def verify(self, spec: list, nonces, publics, shares) -> float | None:
        reports = [[nonce.hex(), public.hex(), [s.hex() for s in encoded]]
                   for nonce, public, encoded in zip(nonces, publics, shares)]
        return self._ask({"op": "verify", "vdaf": spec, "verify_key": KEY.hex(), "reports": reports})


def best(times: list[float | None]) -> float | None:
    "The least time, or None when any run is missing"
    return None if not times or any(t is None for t in times) else min(t for t in times if t is not None)


def ms(seconds: float | None, problem: str | None) -> str:
    "The time in ms, or what became of the reference (the reason is printed below the table)"
    if seconds is not None:
        return f"{seconds * 1e3:.3f}"
    return "failed" if (problem or "").startswith("failed") else "not run"


def ratio(reference: float | None, ours: float) -> str:
    return f"{reference / ours:.1f}x" if reference is not None else "-"


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


def finish(vdaf: Prio3, pairs: list) -> None:
    "The verifier message from both aggregators' shares, then verify_next on each"
    message = vdaf.verifier_shares_to_message(CTX, [verifier_share for _, verifier_share in pairs])
    for state, _ in pairs:
        vdaf.verify_next(CTX, state, message)


def count_breakdown(count: int, repeat: int) -> None:
    "Where Prio3Count's per-report verification goes, stage by stage (CPU us per report, both aggregators)"
    vdaf, flp = prio3_count(), prio3_count().flp
    nonces, publics, shares, _ = make_reports(vdaf, 1, count)
    decoded = [(vdaf.decode_public_share(public), [vdaf.decode_input_share(i, s) for i, s in enumerate(encoded)])
               for public, encoded in zip(publics, shares)]
    expanded = [[vdaf.expand_input_share(CTX, i, s) for i, s in enumerate(input_shares)] for _, input_shares in decoded]
    query_rands = [vdaf.query_rands(KEY, CTX, nonce) for nonce in nonces]
    pairs = [[vdaf.verify_init(KEY, CTX, i, nonce, public, s) for i, s in enumerate(input_shares)]
             for nonce, (public, input_shares) in zip(nonces, decoded)]
    stages = [
        ("whole verification (as the table's verify ms)", lambda: verify_one_by_one(vdaf, nonces, publics, shares)),
        ("decode the public share and both input shares",
         lambda: [(vdaf.decode_public_share(p), [vdaf.decode_input_share(i, s) for i, s in enumerate(e)])
                  for p, e in zip(publics, shares)]),
        ("expand the helper's seeds (2 XOF expansions)",
         lambda: [[vdaf.expand_input_share(CTX, i, s) for i, s in enumerate(e)] for _, e in decoded]),
        ("query randomness (1 XOF call per aggregator)",
         lambda: [[vdaf.query_rands(KEY, CTX, nonce) for _ in range(2)] for nonce in nonces]),
        ("FLP query: circuit, weights, evaluations (x2)",
         lambda: [[flp.query(m, proof, q, [], 2) for m, proof, _ in e] for e, q in zip(expanded, query_rands)]),
        ("verify_init, both aggregators, on decoded shares",
         lambda: [[vdaf.verify_init(KEY, CTX, i, nonce, public, s) for i, s in enumerate(input_shares)]
                  for nonce, (public, input_shares) in zip(nonces, decoded)]),
        ("verifier message and verify_next (x2)", lambda: [finish(vdaf, pair) for pair in pairs]),
    ]
    print(f"Prio3Count verification by stage, CPU us per report (both aggregators), best of {repeat}, {count} reports")
    print()
    print("| stage | us |")
    print("|---|--:|")
    for name, stage in stages:
        seconds = []
        for _ in range(repeat):
            start = cpu()
            result = stage()
            seconds.append(result if isinstance(result, float) else (cpu() - start) / count)
        print(f"| {name} | {min(seconds) * 1e6:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Fewer reports per configuration (smoke run).")
    parser.add_argument("--repeat", type=int, default=3, help="Runs per figure; the best is printed.")
    parser.add_argument("--reference", metavar="DIR", help="Checkout of the draft's repository (draft-20 tag).")
    parser.add_argument("--reference-python", metavar="PATH",
                        help="Interpreter for the reference (>= 3.12, with pycryptodomex) [default: python3.12].")
    parser.add_argument("--count-breakdown", action="store_true",
                        help="Only where Prio3Count's per-report verification time goes, stage by stage.")
    args = parser.parse_args()
    repeat = max(1, args.repeat)
    scale = 0.2 if args.quick else 1.0
    if args.count_breakdown:
        count_breakdown(max(100, int(3000 * scale)), repeat)
        return
    reference = Reference(args.reference, args.reference_python)

    configs = [
        ("Count", prio3_count(), ["Count"], 1, 1000),
        ("Sum(255)", prio3_sum(255), ["Sum", 255], 200, 500),
        ("Histogram(64, 8)", prio3_histogram(64, 8), ["Histogram", 64, 8], 17, 200),
        ("Histogram(1024, 32)", prio3_histogram(1024, 32), ["Histogram", 1024, 32], 700, 40),
    ]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
          f"Python {platform.python_version()}; reference: {reference.version or reference.problem}")
    print("Per report, CPU ms (verify = both aggregators); ref = the draft's reference implementation, "
          "x = ref time / ours")
    print()
    print("| VDAF | upload B | shard ms | ref shard ms | shard x | verify ms | ref verify ms | verify x "
          "| batch verify ms | batch reports/s/core | batch x |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for name, vdaf, spec, measurement, count in configs:
        count = max(10, int(count * scale))
        nonces, publics, shares, first_shard = make_reports(vdaf, measurement, count)
        shard_s, ref_shard, single_s, ref_verify, batch_s = [first_shard], [], [], [], []
        for run in range(repeat):  # interleaved: each run times ours, then the reference, on the same inputs
            if run:
                shard_s.append(make_reports(vdaf, measurement, count)[3])
            ref_shard.append(reference.shard(spec, measurement, count))
            single_s.append(verify_one_by_one(vdaf, nonces, publics, shares))
            ref_verify.append(reference.verify(spec, nonces, publics, shares))
            batch_s.append(verify_batched(vdaf, nonces, publics, shares))
        ours_shard, ours_verify, ours_batch = min(shard_s), min(single_s), min(batch_s)
        their_shard, their_verify = best(ref_shard), best(ref_verify)
        print(f"| {name} | {upload_bytes(publics, shares):,} | {ours_shard * 1e3:.3f} | "
              f"{ms(their_shard, reference.problem)} | {ratio(their_shard, ours_shard)} | {ours_verify * 1e3:.3f} | "
              f"{ms(their_verify, reference.problem)} | {ratio(their_verify, ours_verify)} | "
              f"{ours_batch * 1e3:.3f} | {1 / ours_batch:,.0f} | {ratio(their_verify, ours_batch)} |")
    reference.close()
    if reference.problem:
        print(f"\nreference {reference.problem}")

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
