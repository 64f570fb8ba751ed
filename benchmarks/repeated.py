"""Repeated collection (issue 35): dBitFlip and 1BitMean against the paper's formulas and multi-freq-ldpy 0.2.5's
``long_freq_est.dBitFlipPM``, in one run.

* dBitFlip, for k = 64 and 1,024 buckets, d = 1 and 4, epsilon 1 and 4, n = 1e5 and 1e6, on Zipf(1.1) data:
  our MSE (unbiased estimate, mean over buckets) over the formula (``histogram_variance``) in ``--trials``
  independent populations (fresh devices on the cell's values; the truth is those values' histogram), with its SE
  (the sample SD of the populations' ratios over sqrt(trials)); n * MSE of ours and of the peer's (its estimate is
  clipped and renormalised); "same way, ours/peer": our MSE on the peer's users post-processed the peer's way
  (clipped, renormalised) over the peer's, both averaged over independent runs, with the delta-method SE: the
  like-for-like figure, since clipping and renormalising shrinks a sparse histogram towards 0 and beats every
  unbiased estimate on MSE (the peer draws the same mechanism, so 1 is expected); server time (aggregate +
  estimate).  The peer's client and aggregator are Python loops over users (and buckets): it runs on the first
  ``--peer-cap`` users and its time is scaled linearly to n (marked ``~``).
* The cell k = 64, d = 4, eps 1, n = 1e6 (1.11 with 20 populations on 2026-12-02) again with ``--recheck-trials``.
* 1BitMean: MSE over the formula (``mean_variance``: exact, sum of P_i (1 - P_i), not the worst case 1/4) at
  epsilon 1 and 4 with its SE over ``--mean-trials`` populations, and the formula variance of the one-shot mean
  mechanisms at the same epsilon (Duchi is 1BitMean without rounding; Laplace, Piecewise, Hybrid).
* 365 periods of 1e5 devices (histogram k = 64, d = 4): the stored aggregates (JSON) read back and the series
  estimated, timed, with the peak memory of that step.

    bash benchmarks/setup_peers.sh                 # once: peers in benchmarks/.venv-peers
    benchmarks/.venv-peers/bin/python benchmarks/repeated.py [--quick] [--no-peers]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import tracemalloc

import numpy as np

from client_sdk import mechanism_from_spec
from client_sdk.kinds.repeated import parse_params
from estimators.kinds.repeated import (
    PeriodAggregate,
    aggregate_from_json,
    estimate_period,
    estimate_series,
    histogram_variance,
    mean_variance,
    simulate_devices,
)

SAME_WAY_TRIALS = 20  # populations of ours on the peer's users, post-processed its way
PARTS = ("histograms", "recheck", "means", "series")
RECHECK = (64, 4, 1.0, 1_000_000)  # k, d, epsilon, n of the cell that read 1.11 with 20 populations


def zipf_buckets(n: int, k: int, rng: np.random.Generator, exponent: float = 1.1) -> np.ndarray:
    weights = 1 / np.arange(1, k + 1) ** exponent
    return rng.choice(k, size=n, p=weights / weights.sum())


def histogram_params(k: int, d: int, epsilon: float):
    return parse_params({"mode": "histogram", "range": [0, k], "buckets": k, "bits": d, "epsilon": epsilon})


def ours(k: int, d: int, epsilon: float, buckets: np.ndarray, trials: int, rng: np.random.Generator) -> dict:
    "Our MSE over the formula in ``trials`` independent populations (fresh devices on the same values): mean, SE"
    params, n = histogram_params(k, d, epsilon), buckets.size
    values = buckets + 0.5
    truth = np.bincount(buckets, minlength=k) / n
    formula = float(np.mean(histogram_variance(params, truth, n)))
    ratios, server = [], []
    for _ in range(trials):
        devices = simulate_devices(params, n, rng)
        sent_buckets, bits = devices.report(values, rng)
        started = time.process_time()
        estimate = estimate_period(PeriodAggregate(params).add_arrays(sent_buckets, bits))
        server.append(time.process_time() - started)
        ratios.append(float(np.mean((estimate.shares - truth) ** 2)) / formula)
    ratio, se = mean_and_se(ratios)
    return {"ratio": ratio, "ratio_se": se, "mse": ratio * formula, "server_s": min(server), "n": n}


def mean_and_se(samples) -> tuple[float, float]:
    "The mean of independent samples and its standard error (sample SD / sqrt(count))"
    array = np.asarray(samples, np.float64)
    return float(array.mean()), float(array.std(ddof=1) / np.sqrt(array.size)) if array.size > 1 else float("nan")


def clipped_renormalised(shares: np.ndarray) -> np.ndarray:
    "The peer's post-processing: negatives to 0, then scaled to sum to 1"
    positive = np.clip(shares, 0.0, None)
    return positive / positive.sum() if positive.sum() > 0 else positive


def peer(k: int, d: int, epsilon: float, buckets: np.ndarray, cap: int, trials: int,
         rng: np.random.Generator) -> dict:
    """The peer on the first ``cap`` users, ``trials`` times (its own randomness each time), and ours on the same
    users post-processed the peer's way, ``SAME_WAY_TRIALS`` times: both mean MSEs with their SEs"""
    # the peer is installed in its own environment only (benchmarks/setup_peers.sh)
    from multi_freq_ldpy.long_freq_est.dBitFlipPM import (
        dBitFlipPM_Aggregator_MI,
        dBitFlipPM_Client,
    )

    users = buckets[:cap]
    truth = np.bincount(users, minlength=k) / users.size
    params = histogram_params(k, d, epsilon)
    errors, server = [], []
    for _ in range(trials):
        reports = [dBitFlipPM_Client(int(value), k, k, d, epsilon) for value in users]
        started = time.process_time()
        estimate = dBitFlipPM_Aggregator_MI(reports, k, d, epsilon)
        server.append(time.process_time() - started)
        errors.append(float(np.mean((estimate - truth) ** 2)))
    # ours on the same users, post-processed the peer's way: the like-for-like MSE
    same_way = [float(np.mean((clipped_renormalised(estimate_period(
        simulate_devices(params, users.size, rng).aggregate(users + 0.5, rng)).shares) - truth) ** 2))
        for _ in range(SAME_WAY_TRIALS)]
    mse, mse_se = mean_and_se(errors)
    ours_mse, ours_se = mean_and_se(same_way)
    ratio = ours_mse / mse
    ratio_se = ratio * float(np.hypot(ours_se / ours_mse, mse_se / mse)) if trials > 1 else float("nan")
    formula = float(np.mean(histogram_variance(params, truth, users.size)))
    return {"mse": mse, "formula": formula, "same_way_ratio": ratio, "same_way_se": ratio_se,
            "server_s": min(server) * buckets.size / users.size, "n": users.size, "scaled": users.size < buckets.size}


def print_histograms(cells, trials: int, cap: int, peer_trials: int, rng: np.random.Generator) -> None:
    print(f"\ndBitFlip histogram: mean MSE over buckets, ours over the formula ({trials} populations a cell, +- SE);"
          f" the peer on {cap:,} users ({peer_trials} runs) against ours on them post-processed its way"
          f" ({SAME_WAY_TRIALS} populations)")
    print(f"{'k':>5} {'d':>2} {'eps':>4} {'n':>9} | {'ours/formula':>15} {'n*MSE ours':>11} {'server s':>9} |"
          f" {'n*MSE peer':>11} {'same way, ours/peer':>19} {'server s':>9} {'peer/ours time':>14}")
    for k, d, epsilon, n in cells:
        buckets = zipf_buckets(n, k, rng)
        mine = ours(k, d, epsilon, buckets, trials, rng)
        line = (f"{k:>5} {d:>2} {epsilon:>4g} {n:>9,} | {mine['ratio']:>7.3f} +- {mine['ratio_se']:.3f} "
                f"{n * mine['mse']:>11.4f} {mine['server_s']:>9.4f} |")
        if peer_trials:
            theirs = peer(k, d, epsilon, buckets, cap, peer_trials, rng)
            mark = "~" if theirs["scaled"] else " "
            line += (f" {theirs['n'] * theirs['mse']:>11.4f}"
                     f" {theirs['same_way_ratio']:>11.3f} +- {theirs['same_way_se']:.3f}"
                     f" {mark}{theirs['server_s']:>8.2f} {theirs['server_s'] / mine['server_s']:>13.0f}x")
        print(line, flush=True)


def print_recheck(trials: int, rng: np.random.Generator) -> None:
    "The cell that read 1.11 with 20 populations (docs/benchmarks.md, 2026-12-02), with ``trials`` populations"
    k, d, epsilon, n = RECHECK
    mine = ours(k, d, epsilon, zipf_buckets(n, k, rng), trials, rng)
    print(f"\nrecheck k = {k}, d = {d}, eps {epsilon:g}, n = {n:,}, {trials} populations: ours/formula "
          f"{mine['ratio']:.3f} +- {mine['ratio_se']:.3f}")


def print_means(epsilons, n: int, trials: int, rng: np.random.Generator) -> None:
    print(f"\n1BitMean on [0, 100], s = 11, n = {n:,}, {trials} populations: MSE over the formula (+- SE); n * variance"
          " of one-shot mechanisms at the same epsilon (formula)")
    values = 100 * rng.beta(0.5, 3, n)
    t = 2 * values / 100 - 1
    for epsilon in epsilons:
        params = parse_params({"mode": "mean", "range": [0, 100], "rounding_points": 11, "epsilon": epsilon})
        formula = mean_variance(params, values)
        ratio, se = mean_and_se([
            (estimate_period(simulate_devices(params, n, rng).aggregate(values, rng)).mean - values.mean()) ** 2
            / formula for _ in range(trials)])
        others = []
        for mechanism in ("duchi", "laplace", "piecewise", "hybrid"):
            randomizer = mechanism_from_spec({"name": "m", "mechanism": mechanism, "epsilon": epsilon,
                                              "range": [0, 100]})
            per_report = np.mean([randomizer.variance(float(x)) for x in t[:2000]]) * (100 / 2) ** 2
            others.append(f"{mechanism} {per_report:.0f}")
        print(f"  eps {epsilon:g}: ours/formula {ratio:.3f} +- {se:.3f}, n*var ours {n * formula:.0f}; "
              + ", ".join(others), flush=True)


def print_series(periods: int, n: int, rng: np.random.Generator) -> None:
    params = histogram_params(64, 4, 1.0)
    devices = simulate_devices(params, n, rng)
    base = zipf_buckets(n, 64, rng)
    stored = {}
    for day in range(periods):
        moved = np.where(rng.random(n) < 0.05, zipf_buckets(n, 64, rng), base)
        stored[f"day-{day:03d}"] = json.dumps(devices.aggregate(moved + 0.5, rng).to_json())
    tracemalloc.start()
    started = time.perf_counter()
    series = estimate_series({label: aggregate_from_json(params, json.loads(text)) for label, text in stored.items()})
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"\n{periods} periods of {n:,} devices (k = 64, d = 4): stored aggregates read and the series estimated in "
          f"{elapsed:.3f} s, peak {peak / 2**20:.1f} MiB ({len(series)} estimates)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="n = 1e5 only, epsilon 1")
    parser.add_argument("--trials", type=int, default=50, help="simulated populations per dBitFlip cell (ours)")
    parser.add_argument("--mean-trials", type=int, default=2000, help="simulated populations per 1BitMean cell")
    parser.add_argument("--recheck-trials", type=int, default=1000,
                        help=f"populations for the cell {RECHECK} (0: skip)")
    parser.add_argument("--peer-cap", type=int, default=20_000, help="users the peer's client and aggregator process")
    parser.add_argument("--peer-trials", type=int, default=5, help="runs of the peer per cell")
    parser.add_argument("--no-peers", action="store_true", help="only ldp-telemetry")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if not parts <= set(PARTS):
        parser.error(f"--parts: unknown {', '.join(sorted(parts - set(PARTS)))}")
    peer_trials = 0 if args.no_peers else args.peer_trials
    if peer_trials:
        try:
            import multi_freq_ldpy  # noqa: F401
        except ImportError:
            print("multi-freq-ldpy not installed (bash benchmarks/setup_peers.sh); ldp-telemetry alone")
            peer_trials = 0
    print(f"machine: {platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}")
    rng = np.random.default_rng(2035)
    epsilons = (1.0,) if args.quick else (1.0, 4.0)
    sizes = (100_000,) if args.quick else (100_000, 1_000_000)
    cells = [(k, d, epsilon, n) for k in (64, 1024) for d in (1, 4) for epsilon in epsilons for n in sizes]
    if "histograms" in parts:
        print_histograms(cells, args.trials, args.peer_cap, peer_trials, rng)
    if "recheck" in parts and args.recheck_trials and not args.quick:
        print_recheck(args.recheck_trials, rng)
    if "means" in parts:
        print_means(epsilons, 100_000, 50 if args.quick else args.mean_trials, rng)
    if "series" in parts:
        print_series(365, 100_000, rng)


if __name__ == "__main__":
    main()
