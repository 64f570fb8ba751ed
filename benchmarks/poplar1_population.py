"""What the two poplar1 walk benchmarks share (``poplar1_walk.py`` in one process, ``poplar1_processes.py`` over a
real leader and helper): their options, the campaign, the devices' Zipf-distributed strings, and the summary line
of a walk's heavy hitters against the planted counts."""

from __future__ import annotations

import argparse
import os
import random
from collections import Counter
from collections.abc import Sequence


def parser(doc: str, devices: int) -> argparse.ArgumentParser:
    "The options of a walk benchmark whose docstring is ``doc``; ``devices`` by default"
    options = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    options.add_argument("--devices", type=int, default=devices)
    options.add_argument("--bits", type=int, default=32)
    options.add_argument("--stride", type=int, default=4)
    options.add_argument("--threshold", type=float, default=0.01)
    options.add_argument("--zipf", type=float, default=1.1)
    options.add_argument("--domain", type=int, default=1 << 16)
    return options


def campaign(args: argparse.Namespace) -> dict:
    "The walked campaign's spec source"
    return {"name": "walk", "kind": "poplar1", "trust": "distributed", "epsilon": 1.0, "delta": 1e-6,
            "bits": args.bits, "stride": args.stride, "threshold": args.threshold, "min_batch": 100}


def zipf_values(args: argparse.Namespace) -> list[str]:
    "Each device's string: a Zipf(``--zipf``) rank over ``--domain``, as ``bits / 8`` hex digits (seeded)"
    rng = random.Random(1)
    weights = [1 / (rank + 1) ** args.zipf for rank in range(args.domain)]
    ranks = rng.choices(range(args.domain), weights, k=args.devices)
    return [f"{rank:0{args.bits // 8}x}"[-(args.bits // 8):] for rank in ranks]


def summary(args: argparse.Namespace, values: Sequence[str], heavy_hitters: Sequence[dict], levels: int,
            candidates: int, timings: str) -> str:
    "The result line: the walk's size and times, then the planted strings found and the intervals covering them"
    truth = Counter(values)
    planted = {value: count for value, count in truth.items() if count >= args.threshold * args.devices}
    found = {row["value"]: row for row in heavy_hitters}
    covered = sum(1 for value, count in planted.items()
                  if value in found and found[value]["ci_low"] <= count <= found[value]["ci_high"])
    return (f"devices {args.devices}, bits {args.bits}, stride {args.stride}, threshold {args.threshold}: "
            f"{timings} ({levels} levels, {candidates} candidates, load average "
            f"{'/'.join(f'{load:.1f}' for load in os.getloadavg())}); {len(planted)} above threshold, "
            f"{len(set(planted) & set(found))} found, {covered} covered; {len(found)} released, "
            f"{sum(row['clears_threshold'] for row in found.values())} clearing the threshold")
