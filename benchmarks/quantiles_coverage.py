"""Coverage of the quantiles kind's 95% intervals by simulation: ranges, the CDF band, the quantiles' intervals.

Each run draws n devices from a population (the coverage test's: log-normal, bimodal, a point mass plus a uniform;
and a held-out exponential the estimator was not tuned on) over 64 buckets, or ``--buckets`` (1024 is issue 34's
domain; the populations and ranges scale with it), simulates their reports (OLH, B = 4), estimates, and checks
each interval against the truth: a random range of ``RANGES`` against its true share, the
simultaneous band against the whole true CDF, and each quantile's interval (``ci_low..ci_high``) against the
p-quantile of the true bucketed distribution interpolated linearly within a bucket (the estimator's estimand).
Seeds are fixed per cell (crc32 of the population's name, n, epsilon), so a cell's figures do not depend on the
grid it runs in.  Prints per cell: runs and the share covered, with the binomial SE of a 0.95 rate.
``--binomial`` draws each level's aggregate directly (OLH only, for n where simulating every report is slow):
node i's support count Bin(n_i, p*) + Bin(n_l - n_i, q*), independent across nodes, as a fully random hash gives;
the same mean and covariance as the reports' (the estimator's variance uses no more), other draws than theirs.

    .venv/bin/python benchmarks/quantiles_coverage.py --n 10000 100000 --epsilon 0.5 1 2 --runs 200
    .venv/bin/python benchmarks/quantiles_coverage.py --buckets 1024 --n 100000 1000000 --runs 400 --binomial
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys
import zlib

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from client_sdk.kinds.quantiles import QuantilesParams, parse_params  # noqa: E402
from estimators.kinds.quantiles import QuantilesAggregate, estimate_quantiles, invert_cdf, simulate_aggregate  # noqa: E402
from estimators.kinds.quantiles.aggregate import support_probabilities  # noqa: E402

QUANTILES = (0.5, 0.9, 0.95, 0.99)
RANGES = ((0, 8), (5, 40), (16, 17), (30, 64))
BUCKETS = 64


POPULATIONS = {  # bucket values of n devices over d buckets; the first three are the coverage test's populations
    "lognormal": lambda rng, n, d: rng.lognormal(math.log(d / 8), 0.8, n),
    "bimodal": lambda rng, n, d: np.where(rng.random(n) < 0.7, rng.normal(d * 0.2, d * 0.05, n),
                                          rng.normal(d * 0.75, d * 0.08, n)),
    "point": lambda rng, n, d: np.where(rng.random(n) < 0.4, d * 0.3 + 0.5, rng.uniform(0, d, n)),
    "exponential": lambda rng, n, d: rng.exponential(d / 6, n),
}


def population(name: str, rng: np.random.Generator, n: int, buckets: int = BUCKETS) -> np.ndarray:
    "Bucket indices of n devices from ``POPULATIONS[name]`` over ``buckets`` buckets"
    return np.clip(np.floor(POPULATIONS[name](rng, n, buckets)), 0, buckets - 1).astype(np.int64)


def binomial_aggregate(params: QuantilesParams, truth: np.ndarray, n: int,
                       rng: np.random.Generator) -> QuantilesAggregate:
    "An OLH aggregate of n devices drawn from ``truth`` by each node's support count (module docstring)"
    sizes = rng.multinomial(n, [1 / params.height] * params.height)
    padded = np.zeros(params.leaves, dtype=np.int64)
    counts = []
    for level, (p, q) in enumerate(support_probabilities(params), start=1):
        padded[:params.buckets] = rng.multinomial(sizes[level - 1], truth)
        nodes = padded.reshape(params.level_size(level), -1).sum(axis=1)
        counts.append(rng.binomial(nodes, p) + rng.binomial(sizes[level - 1] - nodes, q))
    return QuantilesAggregate("", sizes.astype(np.int64), counts)


def coverage(name: str, n: int, epsilon: float, runs: int, binomial: bool = False,
             buckets: int = BUCKETS) -> dict[str, float]:
    "The share of ``runs`` simulated campaigns whose intervals hold the truth, per figure"
    params = parse_params({"range": [0, buckets], "buckets": buckets, "branching": 4, "oracle": "olh"}, epsilon)
    sample = population(name, np.random.default_rng(999), 2_000_000, buckets)  # the truth, far below the error
    truth = np.bincount(sample, minlength=buckets) / len(sample)
    cdf = np.concatenate([[0.0], np.cumsum(truth)])
    boundaries = np.asarray(params.boundaries)
    true_quantiles = {p: invert_cdf(boundaries, cdf, p) for p in QUANTILES}
    rng = np.random.default_rng([zlib.crc32(name.encode()), n, round(epsilon * 100)])
    held = {key: 0 for key in ("ranges", "band", *QUANTILES)}
    for _ in range(runs):
        aggregate = (binomial_aggregate(params, truth, n, rng) if binomial
                     else simulate_aggregate(params, rng.choice(buckets, size=n, p=truth), rng))
        estimate = estimate_quantiles(params, aggregate, band_draws=500)
        low, high = (bound * buckets // BUCKETS for bound in RANGES[rng.integers(len(RANGES))])
        interval = estimate.range_frequency(low, high)
        held["ranges"] += interval.ci_low <= cdf[high] - cdf[low] <= interval.ci_high
        band_low, band_high = estimate.cdf_band()
        held["band"] += bool(np.all((band_low <= cdf + 1e-12) & (cdf - 1e-12 <= band_high)))
        for row in estimate.quantiles:
            held[row.p] += row.ci_low <= true_quantiles[row.p] <= row.ci_high
    return {str(key): count / runs for key, count in held.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--population", nargs="+", default=list(POPULATIONS), choices=list(POPULATIONS))
    parser.add_argument("--n", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--epsilon", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--binomial", action="store_true", help="draw each level's aggregate directly (OLH)")
    parser.add_argument("--buckets", type=int, default=BUCKETS, help="a power of 4 (the tree has B = 4)")
    args = parser.parse_args()
    print(f"runs {args.runs}: SE of a 0.95 rate {math.sqrt(0.95 * 0.05 / args.runs):.3f}")
    print("population    n        eps | ranges band  | p50   p90   p95   p99")
    for name in args.population:
        for n in args.n:
            for epsilon in args.epsilon:
                held = coverage(name, n, epsilon, args.runs, args.binomial, args.buckets)
                print(f"{name:<12} {n:<8} {epsilon:<4} | {held['ranges']:.3f}  {held['band']:.3f} | "
                      + "  ".join(f"{held[str(p)]:.3f}" for p in QUANTILES), flush=True)


if __name__ == "__main__":
    main()
