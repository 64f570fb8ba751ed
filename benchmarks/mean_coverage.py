"""Coverage of the mean mechanisms' 95% intervals by simulation, over a wide grid: mechanism x epsilon x n x
population, range [0, 10], the project's own simulate -> aggregate -> estimate, a fresh population per trial.

A coverage estimated from R trials has a Monte-Carlo SE of about sqrt(0.95 * 0.05 / R) (0.0049 at R = 2,000).
Each row: coverage, and the share of trials whose interval lies below / above the truth.  Duchi's (and Hybrid's at
eps <= 0.61, which is Duchi) is exact: the aggregate is a binomial count of ones, so it is computed from that pmf,
every count through the estimator.

Run:  python benchmarks/mean_coverage.py [--trials 2000] [--large-trials 500] [--mechanisms duchi,...]
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import stats

from client_sdk import load_spec, mechanism_from_spec
from estimators import estimate_aggregate
from estimators.aggregation import Aggregate, aggregate
from estimators.registry import ReportBatch
from estimators.simulate import simulate

MECHANISMS = ("laplace", "duchi", "piecewise", "hybrid")
EPSILONS = (0.01, 0.1, 0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 20.0)
SIZES = (30, 100, 300, 1_000, 10_000)
LARGE = 10_000  # sizes from here on use --large-trials


def two_point(share_at_top: float) -> Callable[[np.random.Generator, int], np.ndarray]:
    return lambda rng, size: np.where(rng.random(size) < share_at_top, 10.0, 0.0)


def lomax_mean(scale: float, shape: float) -> float:
    "E min(X, 10) for X ~ Lomax(shape, scale): the integral of (1 + x/scale)^-shape over [0, 10]"
    return scale / (shape - 1) * (1 - (1 + 10 / scale) ** (1 - shape))


# name: (draw, true mean of the values clamped to [0, 10])
POPULATIONS: dict[str, tuple[Callable[[np.random.Generator, int], np.ndarray], float]] = {
    "uniform": (lambda rng, size: rng.uniform(0.0, 10.0, size), 5.0),
    "at 0": (lambda rng, size: np.zeros(size), 0.0),
    "at 10": (lambda rng, size: np.full(size, 10.0), 10.0),
    "2% at 10": (two_point(0.02), 0.2),
    "98% at 10": (two_point(0.98), 9.8),
    "10% at 10": (two_point(0.10), 1.0),
    "half at each": (two_point(0.5), 5.0),
    "Exp(0.1)": (lambda rng, size: rng.exponential(0.1, size), 0.1 * (1 - math.exp(-100))),
    "10-Exp(0.1)": (lambda rng, size: 10.0 - rng.exponential(0.1, size), 10 - 0.1 * (1 - math.exp(-100))),
    "both ends": (lambda rng, size: np.where(rng.random(size) < 0.5, 0.0, 10.0) + np.where(
        rng.random(size) < 0.5, 1.0, -1.0) * rng.exponential(0.1, size), 5.0),
    "Lomax(1.5)": (lambda rng, size: 0.5 * rng.pareto(1.5, size), lomax_mean(0.5, 1.5)),
}


def coverage(mechanism: str, epsilon: float, n: int, population: str, trials: int,
             rng: np.random.Generator) -> tuple[float, float, float]:
    "(coverage, share entirely below the truth, share entirely above) over ``trials`` fresh populations"
    spec = load_spec({"name": "m", "mechanism": mechanism, "epsilon": epsilon, "range": [0, 10]})
    draw, truth = POPULATIONS[population]
    device: Any = mechanism_from_spec(spec)
    if mechanism == "duchi" or (mechanism == "hybrid" and device.alpha == 0):
        return two_valued_coverage(spec, n, truth)
    below = above = 0
    chunk = max(1, 2_000_000 // n)
    for start in range(0, trials, chunk):
        size = min(chunk, trials - start)
        batch = simulate(spec, draw(rng, n * size), rng)
        for i in range(size):
            part = ReportBatch(batch.mechanism, n, {k: v[i * n:(i + 1) * n] for k, v in batch.columns.items()})
            result = estimate_aggregate(spec, aggregate(spec, part))
            below += int(result.ci_high < truth)
            above += int(result.ci_low > truth)
    return 1 - (below + above) / trials, below / trials, above / trials


def two_valued_coverage(spec: Any, n: int, truth: float) -> tuple[float, float, float]:
    """Exactly, for Duchi and Hybrid at eps <= 0.61: for users drawn from a population each code is 1 with
    probability (1 + c E[t]) / 2, so the count of ones is Binomial(n, pi) whatever the population beyond its mean"""
    device: Any = mechanism_from_spec(spec)
    duchi = getattr(device, "duchi", device)
    pi = (1 + float(duchi.slope) * (truth / 5 - 1)) / 2
    ones = np.arange(n + 1)
    pmf = stats.binom.pmf(ones, n, pi)
    statistics = ([k] if duchi is device else [n, k, 0, 0, 0] for k in ones.tolist())
    results = [estimate_aggregate(spec, Aggregate(spec.mechanism, spec.fingerprint, n, np.array(s, dtype=object)))
               for s in statistics]
    below = float(pmf[np.array([r.ci_high < truth for r in results])].sum())
    above = float(pmf[np.array([r.ci_low > truth for r in results])].sum())
    return 1 - below - above, below, above


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--large-trials", type=int, default=500)
    parser.add_argument("--mechanisms", default=",".join(MECHANISMS))
    parser.add_argument("--epsilons", default=",".join(map(str, EPSILONS)))
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--populations", default=",".join(POPULATIONS))
    parser.add_argument("--seed", type=int, default=31)
    args = parser.parse_args()
    print(f"{'mechanism':>9} {'eps':>5} {'n':>6} {'population':>13} {'coverage':>8} {'below':>6} {'above':>6}")
    for mechanism in args.mechanisms.split(","):
        for epsilon in map(float, args.epsilons.split(",")):
            for n in map(int, args.sizes.split(",")):
                for population in args.populations.split(","):
                    trials = args.large_trials if n >= LARGE else args.trials
                    rng = np.random.default_rng([args.seed, n, int(epsilon * 100), len(population)])
                    cov, below, above = coverage(mechanism, epsilon, n, population, trials, rng)
                    print(f"{mechanism:>9} {epsilon:>5g} {n:>6} {population:>13} {cov:>8.3f} {below:>6.3f} "
                          f"{above:>6.3f}", flush=True)


if __name__ == "__main__":
    main()
