"""Repeated collection's estimates against the paper's formulas: unbiased, with the formula's variance (vectorised
simulation with the device's thresholds, and the real device function), intervals that cover, changes and series.

Tolerances are k standard errors, k a Bonferroni quantile over each test's comparisons (tests.tolerances)."""

import math

import numpy as np
import pytest

from client_sdk.kinds.repeated import make_report, parse_params
from client_sdk.randomness import DeterministicRandom
from estimators.kinds.repeated import (
    aggregate_payloads,
    estimate_change,
    estimate_period,
    estimate_series,
    histogram_variance,
    mean_variance,
    simulate_devices,
)
from tests.tolerances import k_sigma, variance_tolerance

MEAN = {"mode": "mean", "range": [0, 10], "rounding_points": 5, "epsilon": 1.0}
HISTOGRAM = {"mode": "histogram", "range": [0, 8], "buckets": 8, "bits": 2, "epsilon": 2.0}
CASES = [MEAN, {**MEAN, "rounding_points": 2, "gamma": 0.1}, {**MEAN, "epsilon": 4.0, "rounding_points": 33},
         HISTOGRAM, {**HISTOGRAM, "gamma": 0.15}, {**HISTOGRAM, "buckets": 64, "bits": 4, "range": [0, 64]}]


def skewed(params, n, rng):
    "Values concentrated near the bottom of the range (Beta(0.5, 3))"
    return params.low + (params.high - params.low) * rng.beta(0.5, 3, n)


def truth(params, values):
    if params.mode == "mean":
        return float(np.mean(values))
    buckets = np.minimum(((values - params.low) * params.buckets / (params.high - params.low)).astype(int),
                         params.buckets - 1)
    return np.bincount(buckets, minlength=params.buckets) / values.size


def point(estimate):
    return estimate.mean if hasattr(estimate, "mean") else estimate.shares


@pytest.mark.parametrize("data", CASES)
def test_unbiased_with_the_formulas_variance(data):
    params, rng, n, repetitions = parse_params(data), np.random.default_rng(35), 2000, 300
    values = skewed(params, n, rng)
    estimates = np.array([point(estimate_period(simulate_devices(params, n, rng).aggregate(values, rng)))
                          for _ in range(repetitions)])
    exact = truth(params, values)
    variance = mean_variance(params, values) if params.mode == "mean" else histogram_variance(params, exact, n)
    comparisons = 2 * np.size(exact)
    k = k_sigma(comparisons)
    assert np.all(np.abs(estimates.mean(axis=0) - exact) <= k * np.sqrt(variance / repetitions))
    assert np.all(np.abs(estimates.var(axis=0, ddof=1) - variance)
                  <= variance_tolerance(1.0, repetitions, comparisons) * variance)


@pytest.mark.parametrize("data", [MEAN, {**HISTOGRAM, "gamma": 0.1}])
def test_the_real_device_matches_the_formula(data):
    "Payloads from make_report (one fresh device each), through the codec and the aggregate, estimate the truth"
    params, rng, n = parse_params(data), np.random.default_rng(3), 6000
    values = skewed(params, n, rng)
    device = DeterministicRandom(35)
    estimate = estimate_period(aggregate_payloads(params, [make_report(device, params, {}, float(v))[0]
                                                           for v in values]))
    exact = truth(params, values)
    variance = mean_variance(params, values) if params.mode == "mean" else histogram_variance(params, exact, n)
    assert np.all(np.abs(point(estimate) - exact) <= k_sigma(np.size(exact)) * np.sqrt(variance))
    se = np.asarray(getattr(estimate, "standard_error", getattr(estimate, "standard_errors", None)))
    assert np.all(np.abs(se**2 / variance - 1) < 0.2)  # the SE estimates the formula's (n = 6000)


def coverage(params, n, repetitions, rng):
    values, hits = skewed(params, n, rng), 0
    exact = truth(params, values)
    for _ in range(repetitions):
        estimate = estimate_period(simulate_devices(params, n, rng).aggregate(values, rng))
        if params.mode == "mean":
            hits += estimate.interval[0] <= exact <= estimate.interval[1]
        else:
            hits += np.mean((estimate.low <= exact) & (exact <= estimate.high))
    return hits / repetitions


@pytest.mark.parametrize("data, n", [(MEAN, 30), (MEAN, 200), ({**MEAN, "epsilon": 4.0}, 50),
                                     (HISTOGRAM, 100), ({**HISTOGRAM, "epsilon": 4.0, "bits": 1}, 200)])
def test_the_95_percent_intervals_cover_at_small_n_on_skewed_data(data, n):
    repetitions = 1000
    covered = coverage(parse_params(data), n, repetitions, np.random.default_rng(n))
    assert covered >= 0.95 - k_sigma(5) * math.sqrt(0.95 * 0.05 / repetitions)


@pytest.mark.parametrize("data", [MEAN, HISTOGRAM])
def test_the_change_between_two_periods_covers_with_the_same_devices(data):
    params, rng, n, repetitions = parse_params(data), np.random.default_rng(8), 400, 500
    before = skewed(params, n, rng)
    after = np.clip(before + rng.normal(0.6, 0.5, n), params.low, params.high)
    exact = np.asarray(truth(params, after)) - np.asarray(truth(params, before))
    hits = 0.0
    for _ in range(repetitions):
        devices = simulate_devices(params, n, rng)
        change = estimate_change(estimate_period(devices.aggregate(before, rng)),
                                 estimate_period(devices.aggregate(after, rng)))
        hits += np.mean((change.low <= exact) & (exact <= change.high))
    assert hits / repetitions >= 0.95 - k_sigma() * math.sqrt(0.95 * 0.05 / repetitions)


def test_an_unchanged_population_has_the_same_estimate_every_period_and_a_zero_change():
    params, rng = parse_params(MEAN), np.random.default_rng(1)
    values, devices = skewed(params, 500, rng), simulate_devices(params, 500, rng)
    periods = {f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}": devices.aggregate(values, rng) for day in range(336)}
    series = estimate_series(periods)
    assert [label for label, _ in series] == sorted(periods) and len({e.mean for _, e in series}) == 1
    assert estimate_change(series[0][1], series[-1][1]).difference == 0.0


@pytest.mark.parametrize("data, repetitions", [(MEAN, 4000), ({**MEAN, "epsilon": 4.0, "rounding_points": 33}, 4000),
                                               ({**HISTOGRAM, "buckets": 64, "bits": 4, "range": [0, 64]}, 400),
                                               ({**HISTOGRAM, "buckets": 256, "bits": 1, "range": [0, 256]}, 400)])
def test_the_variance_is_the_formulas_to_a_few_percent(data, repetitions):
    """The sample variance over fresh populations, pooled over buckets, against the exact formula.  Each bucket's
    s^2 / variance has sd sqrt(2 / (R - 1)); bucket estimates are uncorrelated (a device's bits for two buckets are
    independent, and it holds one value), so the mean over k buckets has sd sqrt(2 / ((R - 1) k)): a 10% excess fails
    (the worst case p(1-p) = 1/4 in place of the exact P_i(1 - P_i) is 16% more at the first case)"""
    params, rng, n = parse_params(data), np.random.default_rng(2035), 2000
    values = skewed(params, n, rng)
    estimates = np.array([point(estimate_period(simulate_devices(params, n, rng).aggregate(values, rng)))
                          for _ in range(repetitions)]).reshape(repetitions, -1)
    exact = np.atleast_1d(truth(params, values))
    variance = np.atleast_1d(mean_variance(params, values) if params.mode == "mean"
                             else histogram_variance(params, exact, n))
    pooled = float(np.mean(estimates.var(axis=0, ddof=1) / variance))
    assert abs(pooled - 1) <= variance_tolerance(1.0, repetitions, 4) / math.sqrt(exact.size)
