"""Poplar1 (draft-irtf-cfrg-vdaf-20): device-side shard time and the aggregators' preparation per report at one
level of the prefix tree; with ``--reference DIR``, the draft's reference implementation measured in the same run
on the same measurements and the same reports.

    python benchmarks/poplar1.py                 # about a minute on the project VM without the reference
    python benchmarks/poplar1.py --quick         # fewer reports, for a smoke run
    python benchmarks/poplar1.py --reference vdaf-ref --reference-python ref-venv/bin/python

Times are CPU seconds per report (``time.process_time`` of the process that does the work), each figure the best
of ``--repeat`` runs.  "prep" covers both aggregators at one aggregation parameter: decoding the public and input
shares, ``verify_init`` on each, both rounds of verifier messages, ``verify_next`` and adding the output share to
the aggregate share.  The candidate prefixes at a level are those a heavy-hitters walk would ask for: the prefixes
of the ``--heavy`` most frequent strings, each with both children, so the IDPF evaluates a realistic tree (the
walk's prefixes share their first bits, little else).

The reference (``--reference``: a checkout of the draft's repository at the draft-20 tag, or its ``poc/``) runs in
its own interpreter (``--reference-python``, default ``python3.12`` on the PATH; Python >= 3.12 with pycryptodomex)
through ``benchmarks/poplar1_reference.py``.  It shards the same measurements and prepares the very reports ours
sharded, fewer of them (``--reference-reports``) because it is slow, except at level 0 where it is not
(``--reference-reports-level0``: a few reports would make that ratio noisy); its counts are checked against ours on
those reports.  Ratios are the reference's time over ours.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.vdaf_reference import CTX, ReferenceWorker  # noqa: E402
from client_sdk.vdaf.idpf import clear_report_cache  # noqa: E402
from client_sdk.vdaf.poplar1 import Poplar1, Poplar1AggParam  # noqa: E402

KEY = bytes(range(32))
WORKER = Path(__file__).with_name("poplar1_reference.py")


class Reference(ReferenceWorker):
    "The draft's Poplar1 (``poplar1_reference.py``): ``ask`` gives the worker's replies"

    def __init__(self, directory: str | None, python: str | None) -> None:
        super().__init__(WORKER, directory, python)


def cpu() -> float:
    return time.process_time()


def bits_of(value: int, width: int) -> tuple[bool, ...]:
    return tuple(bool(value >> (width - 1 - i) & 1) for i in range(width))


def zipf_measurements(bits: int, count: int, rng: random.Random) -> list[tuple[bool, ...]]:
    "Strings drawn from a Zipf(1) law over 1,000 random ``bits``-bit strings"
    support = [rng.getrandbits(bits) for _ in range(1000)]
    weights = [1 / (rank + 1) for rank in range(len(support))]
    return [bits_of(v, bits) for v in rng.choices(support, weights, k=count)]


def walk_prefixes(measurements: list[tuple[bool, ...]], level: int, heavy: int) -> Poplar1AggParam:
    "Both children of the level-1 prefixes of the ``heavy`` most frequent strings (level 0: both bits)"
    counts: dict[tuple[bool, ...], int] = {}
    for m in measurements:
        counts[m] = counts.get(m, 0) + 1
    top = sorted(counts, key=lambda m: -counts[m])[:heavy]
    parents = {m[:level] for m in top}
    prefixes = sorted({parent + (bit,) for parent in parents for bit in (False, True)})
    return level, tuple(prefixes)


def shard_all(vdaf: Poplar1, measurements: list) -> tuple[list, float]:
    reports = []
    start = cpu()
    for measurement in measurements:
        nonce = os.urandom(16)
        public, shares = vdaf.shard(CTX, measurement, nonce)
        reports.append((nonce, vdaf.encode_public_share(public), [vdaf.encode_input_share(s) for s in shares]))
    return reports, (cpu() - start) / len(measurements)


def prepare_all(vdaf: Poplar1, agg_param: Poplar1AggParam, reports: list) -> tuple[float, list[int]]:
    "CPU seconds per report for both aggregators, and the unsharded counts"
    agg_shares = [vdaf.agg_init(agg_param) for _ in range(2)]
    start = cpu()
    for nonce, public, shares in reports:
        public_share = vdaf.decode_public_share(public)
        pairs = []
        for agg_id, share in enumerate(shares):
            clear_report_cache()  # each aggregator cold, as in its own process: no key derived by the other reused
            pairs.append(vdaf.verify_init(KEY, CTX, agg_id, agg_param, nonce, public_share,
                                          vdaf.decode_input_share(agg_id, share)))
        message = vdaf.verifier_shares_to_message(CTX, agg_param, [share for _, share in pairs])
        second = [vdaf.verify_next(CTX, state, message) for state, _ in pairs]
        assert all(isinstance(s, tuple) for s in second)
        message = vdaf.verifier_shares_to_message(CTX, agg_param, [s[1] for s in second])  # type: ignore[index]
        for agg_id, (state, _) in enumerate(second):  # type: ignore[misc]
            out_share = vdaf.verify_next(CTX, state, message)
            agg_shares[agg_id] = vdaf.agg_update(agg_param, agg_shares[agg_id], out_share)  # type: ignore[arg-type]
    seconds = (cpu() - start) / len(reports)
    return seconds, vdaf.unshard(agg_param, agg_shares, len(reports))


def ratio(reference: float | None, ours: float) -> str:
    return f"{reference / ours:.1f}x" if reference is not None else "-"


def ms(seconds: float | None) -> str:
    return f"{seconds * 1e3:.3f}" if seconds is not None else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Fewer reports (smoke run).")
    parser.add_argument("--repeat", type=int, default=3, help="Runs per figure; the best is printed.")
    parser.add_argument("--bits", type=int, default=32, help="Input length in bits [32].")
    parser.add_argument("--heavy", type=int, default=16, help="Heavy hitters the walk follows per level [16].")
    parser.add_argument("--reports", type=int, default=200, help="Reports for our figures [200].")
    parser.add_argument("--reference-reports", type=int, default=10, help="Reports for the reference's [10].")
    parser.add_argument("--reference-reports-level0", type=int, default=200,
                        help="Reports for the reference's level 0 (a millisecond each; fewer make its ratio noisy) "
                             "[200].")
    parser.add_argument("--reference", metavar="DIR", help="Checkout of the draft's repository (draft-20 tag).")
    parser.add_argument("--reference-python", metavar="PATH",
                        help="Interpreter for the reference (>= 3.12, with pycryptodomex) [default: python3.12].")
    args = parser.parse_args()
    repeat = max(1, args.repeat)
    count = max(10, args.reports // (5 if args.quick else 1))
    ref_count = max(2, min(count, args.reference_reports // (2 if args.quick else 1)))
    ref_count_level0 = max(2, min(count, args.reference_reports_level0 // (2 if args.quick else 1)))
    bits = args.bits
    vdaf = Poplar1(bits)
    rng = random.Random(2026)
    measurements = zipf_measurements(bits, count, rng)
    reference = Reference(args.reference, args.reference_python)

    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
          f"Python {platform.python_version()}; reference: {reference.version or reference.problem}")
    print(f"Poplar1, {bits}-bit inputs (Zipf), per report, CPU ms (prep = both aggregators, both rounds); "
          f"{count} reports ours, {ref_count} the reference's ({ref_count_level0} at level 0); x = ref time / ours")
    print()
    reports, first = shard_all(vdaf, measurements)
    shard_s = [first] + [shard_all(vdaf, measurements)[1] for _ in range(repeat - 1)]
    ref_shard = [reference.ask({"op": "shard", "bits": bits, "measurements": measurements[:ref_count]})
                 for _ in range(repeat)]
    theirs = min(r["seconds"] for r in ref_shard) if all(ref_shard) else None  # type: ignore[index]
    print("| step | prefixes | upload B | ms | ref ms | x |")
    print("|---|--:|--:|--:|--:|--:|")
    upload = 16 + len(reports[0][1]) + sum(len(s) for s in reports[0][2])
    print(f"| shard | - | {upload:,} | {ms(min(shard_s))} | {ms(theirs)} | {ratio(theirs, min(shard_s))} |")
    for level in sorted({0, bits // 4, bits // 2, bits - 2, bits - 1}):
        agg_param = walk_prefixes(measurements, level, args.heavy)
        runs = [prepare_all(vdaf, agg_param, reports) for _ in range(repeat)]
        ours, counts = min(r[0] for r in runs), runs[0][1]
        checked = reports[:ref_count_level0 if level == 0 else ref_count]
        request = {"op": "verify", "bits": bits, "verify_key": KEY.hex(),
                   "agg_param": vdaf.encode_agg_param(agg_param).hex(),
                   "reports": [[n.hex(), p.hex(), [s.hex() for s in shares]] for n, p, shares in checked]}
        replies = [reference.ask(request) for _ in range(repeat)]
        theirs = min(r["seconds"] for r in replies) if all(replies) else None  # type: ignore[index]
        if replies[0] is not None and replies[0]["counts"] != prepare_all(vdaf, agg_param, checked)[1]:
            raise SystemExit(f"level {level}: the reference counts the same reports differently")
        assert sum(counts) <= count
        print(f"| prep level {level} | {len(agg_param[1])} | - | {ms(ours)} | {ms(theirs)} | {ratio(theirs, ours)} |")
    reference.close()
    if reference.problem:
        print(f"\nreference {reference.problem}")


if __name__ == "__main__":
    main()
