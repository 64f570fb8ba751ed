"""Shuffle amplification: ``estimators.shuffle`` against the reference numerical bound, run in the same benchmark.

    bash benchmarks/setup_shuffle_peer.sh                # once: the reference in benchmarks/.venv-shuffle-peer
    python benchmarks/shuffle_amplification.py [--quick] [--write tests/data/shuffle_reference.json]

The reference is ``computeamplification.py`` of apple/ml-shuffling-amplification (Feldman, McMillan, Talwar, FOCS
2021), shipped unchanged in PyPI's ``ldp-hierarchical-mechanism`` 0.1.3, run in its own environment by
benchmarks/shuffle_peer.py.  Both compute Theorem 3.2's bound: the smallest epsilon at which the hockey-stick
divergence of the paper's clone pair is at most delta.  Ours sums that divergence exactly (every c; see
``estimators.shuffle``); the reference brackets it, ``numericalanalysis(n, epsilon0, delta, num_iterations, step,
upperbound)``, at two settings:

* published (10 binary-search steps, blocks of 100 values of C), at every point;
* finest (20 steps, blocks of 1 value of C), at every point where C's standard deviation is at most ``FINEST_SD``
  (26 of the 40 points; beyond it a point takes the reference minutes, over 10 at n = 1e6, epsilon0 <= 2).

Its lower bound sums the divergence of the values of C it visited; its upper bound adds, at its early stop, the
mass of C not yet visited at divergence 1, once that mass falls below the delta summed so far, so at every step
and number of iterations it sees up to twice the divergence, and its epsilon lies above the exact one.  Ours lies
between the two (less the search's resolution: the reference returns the top of its last interval), within a
relative 1e-4 of the finest lower bound; the column "up d/d" is the delta the reference's upper-bound search sees
at our epsilon, over delta.  The check "ok": ours within the finest bounds (or the published ones where the finest
is not run), and the reference's own per-c divergence (``onestep``) summed over every c is above delta at ours
times 1 - 1e-4 and at most delta at ours times 1 + 1e-4.

``--write`` stores the reference's figures as test data (tests/estimators/test_shuffle.py reads them).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from estimators.shuffle import amplified_epsilon, closed_form_epsilon  # noqa: E402

PEER_PYTHON = ROOT / "benchmarks" / ".venv-shuffle-peer" / "bin" / "python"
PUBLISHED = (10, 100)  # the reference's published settings (README of apple/ml-shuffling-amplification)
FINEST = (20, 1)  # blocks of one value of C; 20 steps: a resolution of 1e-6 of the search's start
FINEST_SD = 60.0  # the finest setting where Bin(n - 1, e^-epsilon0) has at most this standard deviation
BRACKET = 1e-4
AGREE = 1e-3  # ours within this relative distance of the finest lower bound (the tolerance)


def grid(quick: bool) -> list[tuple[float, int, float]]:
    if quick:
        return [(e, n, 1e-6) for e in (1.0, 4.0) for n in (10**3, 10**4)]
    return [(e, n, d) for d in (1e-6, 1e-8) for e in (0.5, 1.0, 2.0, 4.0, 8.0) for n in (10**3, 10**4, 10**5, 10**6)]


def finest_runs(point: tuple[float, int, float]) -> bool:
    epsilon0, n, _ = point
    p = math.exp(-epsilon0)
    return math.sqrt((n - 1) * p * (1 - p)) <= FINEST_SD


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
    settings = [[list(PUBLISHED)] + ([list(FINEST)] if finest_runs(p) else []) for p in points]
    request = {"points": [[*p, s] for p, s in zip(points, settings)],
               "divergences": [[p[0], p[1], probes(e, p[0])] for p, e in zip(points, epsilons)],
               "upper_at": [[p[0], p[1], e] for p, e in zip(points, epsilons) if finest_runs(p)]}
    result = subprocess.run([str(python), str(ROOT / "benchmarks" / "shuffle_peer.py")], input=json.dumps(request),
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def resolution(point: tuple[float, int, float], iterations: int) -> float:
    "The reference's search interval at the end: its start (the closed form, or epsilon0) over 2^iterations"
    return closed_form_epsilon(*point) * 2.0 ** -iterations


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
    rows = {(r["epsilon0"], r["n"], r["delta"], r["iterations"], r["step"]): r for r in peer["rows"]}
    upper_at = iter(peer["upper_at"])
    print(f"reference: {peer['peer']} (Python {peer['python']}); published {PUBLISHED}, finest {FINEST} "
          "(iterations, step)")
    print(f"{'eps0':>4} {'n':>7} {'delta':>5} | {'ours':>9} {'closed':>7} | {'pub low':>9} {'pub up':>9} | "
          f"{'fine low':>9} {'fine up':>9} {'/low-1':>8} {'/up-1':>7} {'up d/d':>6} | {'ours ms':>7} {'fine ms':>8}"
          f" {'x fine':>6} {'x pub':>6} | check")
    gaps, agree, speed_fine, speed_pub, checks, stored = [], [], [], [], [], []
    for point, (value, seconds), divergence in zip(points, mine, peer["divergences"]):
        epsilon0, n, delta = point
        published = rows[(epsilon0, n, delta, *PUBLISHED)]
        finest = rows.get((epsilon0, n, delta, *FINEST))
        bounds, iterations = (finest, FINEST[0]) if finest else (published, PUBLISHED[0])
        inside = bounds["lower"] - resolution(point, iterations) <= value <= bounds["upper"] * (1 + 1e-9)
        by_epsilon = dict(zip(divergence["epsilons"], divergence["deltas"]))
        below, above = by_epsilon.get(value * (1 - BRACKET)), by_epsilon.get(value * (1 + BRACKET))
        ok = (below is None or below > delta) and (above is None or above <= delta) and inside
        pub_speed = published["upper_s"] / seconds if seconds > 0 else float("inf")
        speed_pub.append(pub_speed)
        fine = "         -         -        -       -      -"
        fine_s = "       -      -"
        if finest:
            to_low, to_up = value / finest["lower"] - 1, value / finest["upper"] - 1
            ok = ok and abs(to_low) <= AGREE
            agree.append(to_low)
            gaps.append(to_up)
            speed_fine.append(finest["upper_s"] / seconds if seconds > 0 else float("inf"))
            fine = (f"{finest['lower']:9.6g} {finest['upper']:9.6g} {to_low:+8.1e} {to_up:+7.2%} "
                    f"{next(upper_at) / delta:6.3f}")
            fine_s = f"{finest['upper_s'] * 1e3:8.0f} {speed_fine[-1]:5.0f}x"
        checks.append(ok)
        print(f"{epsilon0:>4g} {n:>7.0e} {delta:>5.0e} | {value:9.6g} {closed_form_epsilon(*point):7.4g} | "
              f"{published['lower']:9.6g} {published['upper']:9.6g} | {fine} | {seconds * 1e3:7.2f} {fine_s} "
              f"{pub_speed:5.0f}x | {'ok' if ok else 'FAIL'}")
        stored.append({"epsilon0": epsilon0, "n": n, "delta": delta, "reference_upper": published["upper"],
                       "reference_lower": published["lower"], "reference_closed_form": published["closed_form"],
                       "iterations": PUBLISHED[0], "step": PUBLISHED[1], "epsilons": divergence["epsilons"],
                       "reference_deltas": divergence["deltas"],
                       **({"finest": {"iterations": FINEST[0], "step": FINEST[1], "upper": finest["upper"],
                                      "lower": finest["lower"]}} if finest else {})})
    print(f"\n{sum(checks)}/{len(checks)} points ok: ours within the reference's bounds (less its search's "
          f"resolution) and within a relative {BRACKET:g} of its own divergence summed over every c")
    if agree:
        print(f"finest setting, {len(agree)} points: ours / its lower bound - 1 in [{min(agree):+.1e}, "
              f"{max(agree):+.1e}]; ours below its upper bound by {-max(gaps):.2%} to {-min(gaps):.2%} (its early "
              f"stop); faster than its upper bound by {min(speed_fine):.0f}x to {max(speed_fine):.0f}x (median "
              f"{statistics.median(speed_fine):.0f}x)")
    print(f"published setting, {len(speed_pub)} points: faster than its upper bound by {min(speed_pub):.0f}x to "
          f"{max(speed_pub):.0f}x (median {statistics.median(speed_pub):.0f}x)")
    if arguments.write:
        data = {"peer": peer["peer"], "generated_by": "benchmarks/shuffle_amplification.py --write", "points": stored}
        arguments.write.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {arguments.write}")


if __name__ == "__main__":
    main()
