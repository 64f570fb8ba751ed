"""The distributed estimate: unbiased, standard error from the exact noise variance, intervals that cover."""

import math

import numpy as np
import pytest

from client_sdk.randomness import DeterministicRandom
from estimators.distributed import AggregatorNoise, calibrate, estimate_distributed
from estimators.distributed.accounting import discrete_gaussian_variance, discrete_laplace_variance
from estimators.errors import NoReports
from tests.tolerances import k_sigma, variance_tolerance

EPSILON, DELTA = 1.0, 1e-6
TRUE_COUNTS = np.array([400, 250, 150, 100, 50, 30, 10, 5, 3, 2, 0, 0, 0, 0, 0, 0])
N = int(TRUE_COUNTS.sum())


def releases(noise, repetitions: int, seed: int) -> np.ndarray:
    "Simulated releases of TRUE_COUNTS: the aggregators' exact samplers"
    rng = DeterministicRandom(seed)
    return np.array([TRUE_COUNTS + np.array(noise.release_noise(len(TRUE_COUNTS), rng)) for _ in range(repetitions)])


@pytest.mark.parametrize("mode", ["gaussian", "laplace", "coins"])
def test_intervals_cover_and_the_standard_error_is_the_noise_formula(mode):
    noise = calibrate(mode, epsilon=EPSILON, delta=DELTA, sensitivity=1)
    repetitions = 600
    draws = releases(noise, repetitions, seed=21)
    estimates = [estimate_distributed(row, kind="histogram", n=N, noise=noise, epsilon=EPSILON, delta=DELTA)
                 for row in draws]
    truth = TRUE_COUNTS / N
    covered = np.array([(e.ci_low <= truth) & (truth <= e.ci_high) for e in estimates])
    total = covered.size
    # each interval holds at least 95% of the exact noise distribution: coverage >= 0.95 within k standard errors
    assert covered.mean() >= 0.95 - k_sigma(3) * math.sqrt(0.95 * 0.05 / total)
    values = np.array([e.estimates for e in estimates])
    std_error = estimates[0].std_errors[0]
    expected_variance = {"gaussian": 2 * discrete_gaussian_variance(float(getattr(noise, "parameter", 1))),
                         "laplace": 2 * discrete_laplace_variance(getattr(noise, "parameter", 1)),
                         "coins": 2 * noise.coins / 4}[mode]
    assert std_error == pytest.approx(math.sqrt(expected_variance) / N, rel=1e-9)
    # the variance counts twice for aggregator noise: two calibrated noises
    if isinstance(noise, AggregatorNoise):
        assert expected_variance == pytest.approx(2 * noise.share_variance())
    errors = (values - truth).ravel()
    offsets, pmf = noise.noise_pmf()
    kurtosis = float((pmf * offsets**4).sum()) / expected_variance**2  # sd of a sample variance: sqrt((kurt-1)/R)
    assert abs(errors.var() - std_error**2) < k_sigma(3) * std_error**2 * math.sqrt((kurtosis - 1) / errors.size)
    assert abs(errors.mean()) < k_sigma(3) * std_error / math.sqrt(errors.size)


def test_a_mean_from_a_sum_release():
    "Values in [0, 1] sent as integers in [0, 16]; each aggregator's centred Binomial on the sum"
    noise = calibrate("coins", epsilon=EPSILON, delta=DELTA, sensitivity=16)
    n, bound = 10_000, 16
    generator = np.random.default_rng(3)
    rng = DeterministicRandom(3)
    repetitions = 400
    means = []
    for _ in range(repetitions):
        # values 0.3 sit on no multiple of 1/16: each is rounded up with probability 0.8 (4.8 = 4 + 0.8)
        rounded = 4 * n + generator.binomial(n, 0.8)
        release = rounded + float(noise.release_noise(1, rng)[0])
        estimate = estimate_distributed(release, kind="sum", n=n, noise=noise, epsilon=EPSILON, delta=DELTA,
                                        value_range=(0.0, 1.0), bound=bound)
        means.append(estimate.estimates[0])
    result = estimate.to_dict()
    assert result["kind"] == "mean" and result["trust"] == "distributed"
    rounding = 1 / (4 * bound * bound * n)  # randomized rounding to multiples of 1/16, at its worst
    assert result["std_error"] == pytest.approx(math.sqrt(noise.variance() / (bound * n) ** 2 + rounding))
    assert abs(np.mean(means) - 0.3) < k_sigma(2) * result["std_error"] / math.sqrt(repetitions)
    # the rounding of 0.3 has variance 0.16 / 256 per report, below the worst case 0.25 / 256
    variance = noise.variance() / (bound * n) ** 2 + 0.16 / (bound * bound * n)
    assert abs(np.var(means) - variance) < variance_tolerance(variance, repetitions, 2)


def test_the_estimate_has_the_local_shape_and_three_trust_models():
    noise = calibrate("gaussian", epsilon=EPSILON, delta=DELTA, sensitivity=1)
    domain = [f"b{i}" for i in range(16)]
    result = estimate_distributed(TRUE_COUNTS * 10, kind="histogram", n=N * 10, noise=noise, epsilon=EPSILON,
                                  delta=DELTA, domain=domain).to_dict()
    assert result["kind"] == "frequency" and [row["value"] for row in result["values"]] == domain
    assert {"estimate", "count", "std_error", "ci_low", "ci_high"} <= set(result["values"][0])
    assert {"central_dp", "trust_models", "guarantee", "noise"} <= set(result)
    models = result["trust_models"]
    local, distributed, central = (models[k]["std_error"] for k in ("local", "distributed", "central"))
    assert local > 10 * distributed and central < distributed < 2 * central
    assert result["guarantee"]["delta"] <= DELTA and result["guarantee"]["epsilon"] <= EPSILON


def test_the_distributed_error_of_a_count_does_not_grow_with_n():
    "Local DP's count error grows as sqrt(n); the distributed count's does not move"
    noise = calibrate("coins", epsilon=EPSILON, delta=DELTA, sensitivity=1)
    counts = {}
    for n in (1_000, 100_000):
        models = estimate_distributed([n // 2, n // 2], kind="histogram", n=n, noise=noise, epsilon=EPSILON,
                                      delta=DELTA).trust_models
        counts[n] = {k: models[k]["std_error"] * n for k in ("local", "distributed")}
    assert counts[1_000]["distributed"] == pytest.approx(counts[100_000]["distributed"])
    assert counts[100_000]["local"] == pytest.approx(10 * counts[1_000]["local"], rel=1e-6)


def test_bad_releases_are_refused():
    noise = calibrate("laplace", epsilon=EPSILON, delta=DELTA, sensitivity=1)
    with pytest.raises(NoReports):
        estimate_distributed([1, 2], kind="histogram", n=0, noise=noise, epsilon=EPSILON, delta=DELTA)
    with pytest.raises(ValueError, match="domain"):
        estimate_distributed([1, 2], kind="histogram", n=3, noise=noise, epsilon=EPSILON, delta=DELTA, domain="abc")
    with pytest.raises(ValueError, match="bound"):
        estimate_distributed(3, kind="sum", n=3, noise=noise, epsilon=EPSILON, delta=DELTA, value_range=(0, 1))
    with pytest.raises(ValueError, match="kind"):
        estimate_distributed(3, kind="median", n=3, noise=noise, epsilon=EPSILON, delta=DELTA)
