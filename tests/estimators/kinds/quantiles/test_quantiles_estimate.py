"""The quantiles estimate: unbiased ranges with the variance the linear map predicts, and interval coverage."""

import functools
import math
import zlib

import numpy as np
import pytest

from client_sdk.errors import PayloadError
from client_sdk.kinds.quantiles import make_report, parse_params
from client_sdk.randomness import DeterministicRandom
from estimators.errors import AggregateMismatch
from estimators.kinds.quantiles import (
    QuantilesAggregate,
    adjoint,
    consistent_tree,
    estimate_quantiles,
    invert_cdf,
    level_covariance,
    reports_for_quantile,
    simulate_aggregate,
)
from tests.tolerances import k_sigma, variance_tolerance


def params_of(oracle="olh", buckets=64, branching=4, epsilon=1.0):
    return parse_params({"range": [0, buckets], "buckets": buckets, "branching": branching, "oracle": oracle},
                        epsilon)


def population(name, buckets, rng, n):
    "Bucket indices of n devices: skewed (latency-like), bimodal, or a point mass plus a uniform"
    if name == "lognormal":
        values = rng.lognormal(math.log(buckets / 8), 0.8, n)
    elif name == "bimodal":
        values = np.where(rng.random(n) < 0.7, rng.normal(buckets * 0.2, buckets * 0.05, n),
                          rng.normal(buckets * 0.75, buckets * 0.08, n))
    else:
        values = np.where(rng.random(n) < 0.4, buckets * 0.3 + 0.5, rng.uniform(0, buckets, n))
    return np.clip(np.floor(values), 0, buckets - 1).astype(np.int64)


@functools.cache
def truth_of(name, buckets):
    "The population's bucket probabilities (by a large sample: its sampling error is far below the tests')"
    sample = population(name, buckets, np.random.default_rng(999), 2_000_000)
    return np.bincount(sample, minlength=buckets) / len(sample)


def true_levels(params, leaves):
    padded = np.zeros(params.leaves)
    padded[: len(leaves)] = leaves
    return [padded.reshape(params.level_size(level), -1).sum(axis=1) for level in range(1, params.height + 1)]


RANGES = [(0, 8), (5, 40), (16, 17), (30, 64)]


@pytest.mark.parametrize("oracle", ["olh", "hadamard"])
def test_ranges_are_unbiased_with_the_predicted_variance(oracle):
    "R simulated campaigns: mean within k SE of the truth, sample variance within k SE of the mean exact variance"
    params, n, repetitions = params_of(oracle), 4000, 300
    truth = truth_of("lognormal", 64)
    rng = np.random.default_rng(5)
    estimates, variances = [], []
    queries = np.zeros((params.leaves, len(RANGES)))
    for column, (lo, hi) in enumerate(RANGES):
        queries[lo:hi, column] = 1
    for _ in range(repetitions):
        aggregate = simulate_aggregate(params, rng.choice(64, size=n, p=truth), rng)
        levels, precisions = consistent_tree(params, aggregate)
        estimates.append(levels[-1] @ queries)
        covariance = level_covariance(params, aggregate, true_levels(params, truth))
        variances.append(np.diag(covariance.quadratic(adjoint(queries, precisions, params.branching))))
    estimates, variance = np.array(estimates), np.mean(variances, axis=0)
    expected = truth @ queries[:64]
    k = k_sigma(2 * len(RANGES))
    assert np.all(np.abs(estimates.mean(axis=0) - expected) <= k * np.sqrt(variance / repetitions))
    for sample, predicted in zip(estimates.var(axis=0, ddof=1), variance):
        assert abs(sample - predicted) <= variance_tolerance(predicted, repetitions, 2 * len(RANGES))


def binomial_floor(level, repetitions, comparisons):
    "The lowest coverage count consistent with a true coverage of ``level`` (k SE below)"
    return level - k_sigma(comparisons) * math.sqrt(level * (1 - level) / repetitions)


@pytest.mark.parametrize(("name", "n", "oracle"), [("lognormal", 3000, "olh"), ("bimodal", 20000, "hadamard"),
                                                    ("point", 500, "olh")])
def test_coverage_of_ranges_band_and_quantiles(name, n, oracle):
    """Lower bounds from 150 runs.  Measured with 400 runs per case (SE of a 0.95 rate: 0.011), the loop below with
    another seed (lognormal n=3000 OLH / bimodal n=20000 Hadamard / point mass n=500 OLH): ranges 0.975 / 0.955 /
    0.94; the simultaneous band 0.9825 / 0.9725 / 0.9625.  The linear CDF's pointwise set, ``pointwise_set``, holds
    the true quantile t at the nominal rate (asserted below, both sides): the plug-in SE of F-hat at t is within 6 %
    of F-hat(t)'s empirical SD, p50..p99.  The reported intervals (the isotonic CDF's, with its own variances) are
    held to the goal on both sides by :func:`test_quantile_intervals_cover_within_the_goal`.
    The estimand is the p-quantile of the bucketed distribution interpolated linearly within each bucket (the
    estimator's own), so a bucket's rounding is not counted as a miss"""
    params, repetitions = params_of(oracle), 150
    truth = truth_of(name, 64)
    cdf = np.concatenate([[0.0], np.cumsum(truth)])
    boundaries = np.asarray(params.boundaries)
    # the estimand: the p-quantile of the bucketed distribution interpolated linearly within each bucket
    true_quantiles = {p: invert_cdf(boundaries, cdf, p) for p in (0.5, 0.9, 0.95, 0.99)}
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    ranges, band, quantiles = 0, 0, {p: 0 for p in true_quantiles}
    in_set = {p: 0 for p in true_quantiles}
    for _ in range(repetitions):
        aggregate = simulate_aggregate(params, rng.choice(64, size=n, p=truth), rng)
        estimate = estimate_quantiles(params, aggregate, band_draws=500)
        lo, hi = RANGES[rng.integers(len(RANGES))]
        interval = estimate.range_frequency(lo, hi)
        ranges += interval.ci_low <= cdf[hi] - cdf[lo] <= interval.ci_high
        band_low, band_high = estimate.cdf_band()
        band += bool(np.all((band_low <= cdf + 1e-12) & (cdf - 1e-12 <= band_high)))
        for row in estimate.quantiles:
            quantiles[row.p] += row.ci_low <= true_quantiles[row.p] <= row.ci_high
            in_set[row.p] += any(low <= true_quantiles[row.p] <= high for low, high in row.pointwise_set)
    comparisons = 15
    assert ranges / repetitions >= binomial_floor(0.95, repetitions, comparisons)
    assert ranges / repetitions <= 1 - binomial_floor(0.95, repetitions, comparisons) + 0.95
    assert band / repetitions >= binomial_floor(0.95, repetitions, comparisons)
    for p, covered in quantiles.items():
        assert covered / repetitions >= binomial_floor(0.95, repetitions, comparisons), p
    for p, held in in_set.items():
        assert binomial_floor(0.95, repetitions, comparisons) <= held / repetitions, p
        assert held / repetitions <= 1 - binomial_floor(0.95, repetitions, comparisons) + 0.95, p


GOAL = (0.93, 0.975)  # issue 34: pointwise coverage of the quantiles' 95% intervals


def test_quantile_intervals_cover_within_the_goal():
    """1,500 runs, log-normal, n = 10,000, OLH: each quantile's coverage at least the goal's 0.93 (k binomial SE of
    the run count below it), and the tails' (p90, p95, p99) misses together at least the goal's 2.5 % a quantile
    (k SE below; the SE of a run's share of misses the larger of the runs' own spread and the binomial one at the
    goal, as if the three were independent).  The hull of the linear CDF's pointwise set fails the second: its
    tails miss in 0.27 % of runs (this test on it: p90 / p95 / p99 0.994 / 0.998 / 1.0; the floor is 1.5 %)"""
    params, repetitions, n = params_of("olh"), 1500, 10_000
    truth = truth_of("lognormal", 64)
    boundaries = np.asarray(params.boundaries)
    true_cdf = np.concatenate([[0.0], np.cumsum(truth)])
    levels = (0.5, 0.9, 0.95, 0.99)
    true_quantiles = [invert_cdf(boundaries, true_cdf, p) for p in levels]
    rng = np.random.default_rng(34)
    misses = np.zeros((repetitions, len(levels)))
    for run in range(repetitions):
        estimate = estimate_quantiles(params, simulate_aggregate(params, rng.choice(64, size=n, p=truth), rng),
                                      band_draws=50)  # the band is not asked here
        misses[run] = [not row.ci_low <= t <= row.ci_high for row, t in zip(estimate.quantiles, true_quantiles)]
    k = k_sigma(len(levels) + 1)
    low, high = GOAL
    for p, missed in zip(levels, misses.mean(axis=0)):
        assert 1 - missed >= low - k * math.sqrt(low * (1 - low) / repetitions), p
    tails = misses[:, 1:].mean(axis=1)
    spread = max(float(np.std(tails, ddof=1)), math.sqrt(high * (1 - high) / 3))
    assert tails.mean() >= (1 - high) - k * spread / math.sqrt(repetitions), misses.mean(axis=0)


def test_the_mean_is_unbiased_within_its_standard_error():
    params, truth = params_of(), truth_of("bimodal", 64)
    rng = np.random.default_rng(8)
    means, errors = [], []
    for _ in range(60):
        estimate = estimate_quantiles(params, simulate_aggregate(params, rng.choice(64, size=5000, p=truth), rng),
                                      band_draws=100)
        means.append(estimate.mean.estimate)
        errors.append(estimate.mean.std_error)
    expected = truth @ (np.arange(64) + 0.5)
    assert abs(np.mean(means) - expected) <= k_sigma(1) * np.mean(errors) / math.sqrt(len(means))
    assert abs(np.std(means, ddof=1) / np.mean(errors) - 1) < 0.35  # the SE is the spread's (60 samples)


def test_reports_through_the_device_estimate_the_truth():
    "The real device function, aggregated from JSON payloads, against the truth within k SE"
    params = params_of(branching=2, buckets=16)
    rng = DeterministicRandom(4)
    values = [1.0] * 1500 + [9.5] * 500
    payloads = [make_report(rng, params, v) for v in values]
    aggregate = QuantilesAggregate.empty(params, "f").with_reports(params, payloads)
    assert aggregate.n == len(values)
    estimate = estimate_quantiles(params, aggregate, band_draws=200)
    share = estimate.range_frequency(0, 8)
    assert abs(share.estimate - 0.75) <= k_sigma(2) * share.std_error
    # the median of the bucketed distribution, linear within [1, 2) where the point mass 1.0 falls: 1 + 0.5 / 0.75
    true_cdf = np.zeros(len(params.boundaries))
    true_cdf[2:] = 0.75
    true_cdf[10:] = 1.0
    median = invert_cdf(np.asarray(params.boundaries), true_cdf, 0.5)
    assert median == pytest.approx(1 + 0.5 / 0.75)
    assert estimate.quantiles[0].ci_low <= median <= estimate.quantiles[0].ci_high


def test_aggregates_merge_and_round_trip_through_json():
    params, rng = params_of("hadamard"), np.random.default_rng(3)
    a = simulate_aggregate(params, rng.integers(0, 64, 500), rng, fingerprint="f")
    b = simulate_aggregate(params, rng.integers(0, 64, 700), rng, fingerprint="f")
    merged = a.merge(b)
    assert merged.n == 1200 and QuantilesAggregate.from_dict(merged.to_dict()) == merged
    with pytest.raises(AggregateMismatch):
        a.merge(simulate_aggregate(params, rng.integers(0, 64, 5), rng, fingerprint="g"))
    with pytest.raises(PayloadError) as caught:
        QuantilesAggregate.empty(params).with_reports(params, [[1, [0, 0]], [9, [0, 0]]])
    assert caught.value.field == "payloads[1][0]"


def test_the_planner_n_for_a_quantile_gives_that_rank_error():
    params = params_of(buckets=64)
    n = reports_for_quantile(params, 0.02)
    rng = np.random.default_rng(12)
    truth = truth_of("lognormal", 64)
    estimate = estimate_quantiles(params, simulate_aggregate(params, rng.choice(64, size=n, p=truth), rng),
                                  band_draws=100)
    assert float(np.max(estimate.cdf_std_errors)) * 1.959964 <= 0.02 * 1.05  # worst boundary, plug-in SE
