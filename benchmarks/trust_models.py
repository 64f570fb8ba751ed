"""Trust models side by side: root mean squared error against n for local, distributed and central DP.

    python benchmarks/trust_models.py            # a few minutes on the project VM
    python benchmarks/trust_models.py --quick    # fewer repetitions and sizes, for a smoke run

Two questions at epsilon 1, delta 1e-6: one bucket's count in a histogram of 16 buckets (RMSE over buckets and
repetitions), and the mean of values in [0, 1] (data: Beta(2, 5)).  Each release is simulated, not run through the
protocol:

* local        the registry's best mechanism for the question (``estimators.planner``), its reports simulated
               (``estimators.simulate``) and de-biased by ``estimators.estimate``
* distributed  the exact sum (histogram counts; for the mean, values randomly rounded to multiples of 1/B,
               B a power of two >= max(16, sqrt(n)/4), and summed as integers in [0, B]) plus the release noise of
               each mode, then ``estimate_distributed``: gaussian, laplace (both aggregators' exact CKS samplers),
               coins (both aggregators' centred Binomials); each share calibrated alone, replace-one (n public):
               the histogram's two buckets, the mean's one sum
* central      a curator's analytic Gaussian (Balle & Wang 2018) on the exact count or mean, and Laplace (the
               family to compare distributed Laplace noise with), under the same relation (replace-one)

"predicted" is the standard error each estimate states; RMSE is measured.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from client_sdk.randomness import DeterministicRandom  # noqa: E402
from estimators import estimate  # noqa: E402
from estimators.central import analytic_gaussian_sigma  # noqa: E402
from estimators.distributed import Shift, calibrate, estimate_distributed  # noqa: E402
from estimators.planner import compare_mechanisms  # noqa: E402
from estimators.simulate import simulate  # noqa: E402

EPSILON, DELTA, BUCKETS = 1.0, 1e-6, 16


def bound_for(n: int) -> int:
    "Grid of the mean: a power of two >= sqrt(n)/4, so the rounding's variance stays below a tenth of the noise's"
    return max(16, 1 << math.ceil(math.log2(math.sqrt(n) / 4)))


def histogram_rows(n: int, repetitions: int, generator: np.random.Generator) -> list[tuple]:
    weights = 0.8 ** np.arange(BUCKETS)
    truth_values = generator.choice(BUCKETS, size=n, p=weights / weights.sum())
    truth = np.bincount(truth_values, minlength=BUCKETS).astype(float)
    rows = []
    best = compare_mechanisms(EPSILON, n, domain_size=BUCKETS)[0]
    spec = {"name": "bench", "mechanism": best.mechanism, "epsilon": EPSILON, "domain": list(range(BUCKETS))}
    local_reps = max(3, min(repetitions, 2_000_000 // (n * 4)))
    errors = [estimate(spec, simulate(spec, truth_values, generator)).estimates * n - truth for _ in range(local_reps)]
    rows.append((f"local ({best.mechanism})", rmse(errors), best.std_error * n))
    rng = DeterministicRandom(n)
    for mode in ("gaussian", "laplace", "coins"):
        noise = calibrate(mode, epsilon=EPSILON, delta=DELTA, sensitivity=Shift(2, 1))
        errors, predicted = [], 0.0
        for _ in range(repetitions):
            release = truth + np.array(noise.release_noise(BUCKETS, rng))
            result = estimate_distributed(release, kind="histogram", n=n, noise=noise, epsilon=EPSILON, delta=DELTA)
            errors.append(result.estimates * n - truth)
            predicted = float(result.std_errors[0]) * n
        rows.append((f"distributed, {mode}", rmse(errors), predicted))
    # a curator under the same relation, replace-one (n public): two buckets move by 1 (L2 sqrt 2, L1 2)
    sigma = analytic_gaussian_sigma(math.sqrt(2), EPSILON, DELTA)
    rows.append(("central, Gaussian", rmse([generator.normal(0, sigma, BUCKETS) for _ in range(repetitions)]), sigma))
    scale = 2.0 / EPSILON
    rows.append(("central, Laplace", rmse([generator.laplace(0, scale, BUCKETS) for _ in range(repetitions)]),
                 math.sqrt(2) * scale))
    return rows


def mean_rows(n: int, repetitions: int, generator: np.random.Generator) -> list[tuple]:
    values = generator.beta(2, 5, size=n)
    true_mean = float(values.mean())
    rows = []
    best = compare_mechanisms(EPSILON, n, value_range=(0.0, 1.0))[0]
    spec = {"name": "bench", "mechanism": best.mechanism, "epsilon": EPSILON, "range": [0.0, 1.0]}
    local_reps = max(3, min(repetitions, 4_000_000 // n))
    errors = [estimate(spec, simulate(spec, values, generator)).mean - true_mean for _ in range(local_reps)]
    rows.append((f"local ({best.mechanism})", rmse(errors), best.std_error))
    rng = DeterministicRandom(n + 1)
    bound = bound_for(n)
    for mode in ("gaussian", "laplace", "coins"):
        noise = calibrate(mode, epsilon=EPSILON, delta=DELTA, sensitivity=bound)
        errors, predicted = [], 0.0
        for _ in range(repetitions):
            scaled = values * bound
            encoded = np.floor(scaled) + (generator.random(n) < scaled - np.floor(scaled))  # randomized rounding
            exact = float(encoded.sum())
            release = exact + noise.release_noise(1, rng)[0]
            result = estimate_distributed(release, kind="sum", n=n, noise=noise, epsilon=EPSILON, delta=DELTA,
                                          value_range=(0.0, 1.0), bound=bound)
            errors.append(float(result.estimates[0]) - true_mean)
            predicted = float(result.std_errors[0])
        rows.append((f"distributed, {mode}, grid 1/{bound}", rmse(errors), predicted))
    sigma = analytic_gaussian_sigma(1.0 / n, EPSILON, DELTA)
    rows.append(("central, Gaussian", rmse([generator.normal(0, sigma) for _ in range(repetitions)]), sigma))
    scale = 1.0 / (n * EPSILON)
    rows.append(("central, Laplace", rmse([generator.laplace(0, scale) for _ in range(repetitions)]),
                 math.sqrt(2) * scale))
    return rows


def rmse(errors: list) -> float:
    return float(math.sqrt(np.mean(np.square(np.asarray(errors, dtype=float)))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    sizes = [100, 10_000] if args.quick else [100, 1_000, 10_000, 100_000, 1_000_000]
    repetitions = 20 if args.quick else 200
    generator = np.random.default_rng(args.seed)
    print(f"epsilon {EPSILON}, delta {DELTA:g}; {repetitions} releases per distributed/central row")
    for title, rows_of, unit in (("Histogram(16): one bucket's count", histogram_rows, "count"),
                                 ("Mean of values in [0, 1]", mean_rows, "mean")):
        print(f"\n{title} (RMSE and predicted standard error, in {unit} units)\n")
        print("| n | trust model | RMSE | predicted SE |")
        print("|---:|---|---:|---:|")
        for n in sizes:
            for label, error, predicted in rows_of(n, repetitions, generator):
                print(f"| {n:,} | {label} | {error:.4g} | {predicted:.4g} |", flush=True)


if __name__ == "__main__":
    main()
