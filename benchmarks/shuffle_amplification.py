"""Shuffle amplification: ``estimators.shuffle`` against the reference numerical bound, run in the same benchmark.

    bash benchmarks/setup_shuffle_peer.sh                # once: the reference in benchmarks/.venv-shuffle-peer
    python benchmarks/shuffle_amplification.py [--quick] [--write tests/data/shuffle_reference.json]

The reference is ``computeamplification.py`` of apple/ml-shuffling-amplification (Feldman, McMillan, Talwar, FOCS
2021), shipped unchanged in PyPI's ``ldp-hierarchical-mechanism`` 0.1.3, run in its own environment by
benchmarks/shuffle_peer.py at its published settings (10 binary-search steps, blocks of 100 values of C).  Over
epsilon0 in {0.5, 1, 2, 4, 8}, n in {1e3, 1e4, 1e5, 1e6}, delta in {1e-6, 1e-8}, per point:

* ours: ``amplified_epsilon`` (the exact divergence of the paper's clone pair, Brent's method), its CPU time;
* the reference's upper and lower bounds (``numericalanalysis(..., upperbound=True/False)``), their CPU time;
* check: the reference's own per-c divergence (``onestep``) summed over every c, at our epsilon times 1 - 1e-4 and
  1 + 1e-4: above delta, then at most delta, means the exact figure of the reference's own formula lies within a
  relative 1e-4 of ours ("ok"); and its divergence at our epsilon over delta.

``--write`` stores the reference's figures as test data (tests/estimators/test_shuffle.py reads them).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from estimators.shuffle import amplified_epsilon, closed_form_epsilon  # noqa: E402

PEER_PYTHON = ROOT / "benchmarks" / ".venv-shuffle-peer" / "bin" / "python"
SETTINGS = (10, 100)  # the reference's published settings (README of apple/ml-shuffling-amplification)
BRACKET = 1e-4


def grid(quick: bool) -> list[tuple[float, int, float]]:
    if quick:
        return [(e, n, 1e-6) for e in (1.0, 4.0) for n in (10**3, 10**5)]
    return [(e, n, d) for d in (1e-6, 1e-8) for e in (0.5, 1.0, 2.0, 4.0, 8.0) for n in (10**3, 10**4, 10**5, 10**6)]


def ours(point: tuple[float, int, float], repeat: int) -> tuple[float, float]:
    "Our epsilon and the least CPU time of ``repeat`` runs"
    times = []
    for _ in range(repeat):
        start = time.process_time()
        value = amplified_epsilon(*point)
        times.append(time.process_time() - start)
    return value, min(times)


def probes(epsilon: float, epsilon0: float) -> list[float]:
    return [e for e in (epsilon * (1 - BRACKET), epsilon, epsilon * (1 + BRACKET)) if 0 < e < epsilon0]


def run_peer(python: Path, points: list, epsilons: list[float]) -> dict:
    request = {"points": [list(p) for p in points], "settings": [list(SETTINGS)],
               "divergences": [[p[0], p[1], probes(e, p[0])] for p, e in zip(points, epsilons)]}
    result = subprocess.run([str(python), str(ROOT / "benchmarks" / "shuffle_peer.py")], input=json.dumps(request),
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="4 points instead of 40")
    parser.add_argument("--repeat", type=int, default=3, help="runs of ours per point (least time kept)")
    parser.add_argument("--peer-python", type=Path, default=PEER_PYTHON)
    parser.add_argument("--write", type=Path, help="store the reference's figures as test data (JSON)")
    arguments = parser.parse_args()
    if not arguments.peer_python.exists():
        sys.exit(f"no reference environment at {arguments.peer_python}: run bash benchmarks/setup_shuffle_peer.sh")
    points = grid(arguments.quick)
    mine = [ours(point, arguments.repeat) for point in points]
    peer = run_peer(arguments.peer_python, points, [value for value, _ in mine])
    print(f"reference: {peer['peer']} (Python {peer['python']}), {SETTINGS[0]} steps, blocks of {SETTINGS[1]}")
    print(f"{'eps0':>4} {'n':>8} {'delta':>6} | {'ours':>10} {'ref lower':>10} {'ref upper':>10} {'ours/up-1':>9}"
          f" {'closed':>8} | {'ours ms':>7} {'ref ms':>7} {'speed-up':>8} | {'check':>5} {'ref d/d':>8}")
    speedups, gaps, checks, stored = [], [], [], []
    for point, (value, seconds), row, divergence in zip(points, mine, peer["rows"], peer["divergences"]):
        epsilon0, n, delta = point
        # the reference returns the top of its last search interval, which starts at the closed form (or epsilon0)
        resolution = closed_form_epsilon(epsilon0, n, delta) * 2.0 ** -SETTINGS[0]
        inside = row["lower"] - resolution <= value <= row["upper"] * (1 + 1e-9)
        by_epsilon = dict(zip(divergence["epsilons"], divergence["deltas"]))
        below = by_epsilon.get(value * (1 - BRACKET))
        above = by_epsilon.get(value * (1 + BRACKET))
        ok = (below is None or below > delta) and (above is None or above <= delta) and inside
        at_ours = by_epsilon.get(value)
        speedup = row["upper_s"] / seconds if seconds > 0 else float("inf")
        speedups.append(speedup)
        gaps.append(value / row["upper"] - 1)
        checks.append(ok)
        ratio = f"{at_ours / delta:8.6f}" if at_ours is not None else "       -"
        print(f"{epsilon0:>4g} {n:>8.0e} {delta:>6.0e} | {value:10.6g} {row['lower']:10.6g} {row['upper']:10.6g}"
              f" {gaps[-1]:+9.2%} {closed_form_epsilon(*point):8.4g} | {seconds * 1e3:7.2f} {row['upper_s'] * 1e3:7.1f}"
              f" {speedup:7.0f}x | {'ok' if ok else 'FAIL':>5} {ratio}")
        stored.append({"epsilon0": epsilon0, "n": n, "delta": delta, "reference_upper": row["upper"],
                       "reference_lower": row["lower"], "reference_closed_form": row["closed_form"],
                       "iterations": SETTINGS[0], "step": SETTINGS[1], "epsilons": divergence["epsilons"],
                       "reference_deltas": divergence["deltas"]})
    print(f"\n{sum(checks)}/{len(checks)} points: ours within [reference lower - its search step, reference upper] "
          f"and within a relative {BRACKET:g} of the reference's own divergence summed over every c")
    print(f"ours below the reference's upper bound by {-max(gaps):.2%} to {-min(gaps):.2%} (its blocks and early stop)")
    print(f"speed-up per point (reference's upper bound over ours, CPU time): least {min(speedups):.0f}x, median "
          f"{statistics.median(speedups):.0f}x")
    if arguments.write:
        data = {"peer": peer["peer"], "generated_by": "benchmarks/shuffle_amplification.py --write", "points": stored}
        arguments.write.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {arguments.write}")


if __name__ == "__main__":
    main()
