"""Unbiasedness, variance against the formula, and CI coverage for every frequency oracle."""

import math

import numpy as np
import pytest

from client_sdk import load_spec, mechanism_from_spec
from estimators import aggregate, estimate, estimate_aggregate
from estimators.simulate import simulate
from tests.tolerances import k_sigma, variance_tolerance

MECHANISMS = ["grr", "sue", "oue", "olh", "hadamard"]
D = 6
TRUE = np.array([0.4, 0.25, 0.15, 0.1, 0.1, 0.0])
N = 4000
REPETITIONS = 1500


def fixed_population():
    return np.repeat(np.arange(D), (TRUE * N).astype(int))


def fixed_data_variance(spec, n):
    "Var(f_v) = [q(1-q)/(p-q)^2 + f_v (1-p-q)/(p-q)] / n (Wang et al. 2017), with the quantized p*, q*"
    m = mechanism_from_spec(spec)
    p, q = m.p_star, m.q_star
    return (q * (1 - q) / (p - q) ** 2 + TRUE * (1 - p - q) / (p - q)) / n


def sampling_variance(spec, n):
    "Users drawn iid: each report supports v w.p. r = q + f (p - q), so Var(f_v) = r(1-r) / (n (p-q)^2)"
    m = mechanism_from_spec(spec)
    p, q = m.p_star, m.q_star
    r = q + TRUE * (p - q)
    return r * (1 - r) / (n * (p - q) ** 2)


def repeat(mechanism, fresh_population):
    spec = load_spec({"name": "t", "mechanism": mechanism, "epsilon": 1.0, "domain": list(range(D))})
    rng = np.random.default_rng(20261129)
    fixed = fixed_population()
    results = []
    for _ in range(REPETITIONS):
        population = rng.choice(D, size=N, p=TRUE) if fresh_population else fixed
        results.append(estimate(spec, simulate(spec, population, rng)))
    return spec, results


@pytest.fixture(scope="module", params=MECHANISMS)
def fixed_data(request):
    "The same population in every repetition: only the mechanism's randomness varies"
    return repeat(request.param, fresh_population=False)


@pytest.fixture(scope="module", params=MECHANISMS)
def sampled_users(request):
    "A fresh iid population in every repetition: what the reported standard error describes"
    return repeat(request.param, fresh_population=True)


def test_unbiased(fixed_data):
    spec, results = fixed_data
    estimates = np.array([r.estimates for r in results])
    standard_error_of_mean = np.sqrt(fixed_data_variance(spec, N) / REPETITIONS)
    assert np.all(np.abs(estimates.mean(axis=0) - TRUE) < k_sigma(D * 5) * standard_error_of_mean)


def test_variance_matches_fixed_data_formula(fixed_data):
    spec, results = fixed_data
    estimates = np.array([r.estimates for r in results])
    expected = fixed_data_variance(spec, N)
    assert np.all(np.abs(estimates.var(axis=0, ddof=1) - expected) < variance_tolerance(expected, REPETITIONS, D * 5))


def test_variance_matches_sampling_formula(sampled_users):
    spec, results = sampled_users
    estimates = np.array([r.estimates for r in results])
    expected = sampling_variance(spec, N)
    assert np.all(np.abs(estimates.var(axis=0, ddof=1) - expected) < variance_tolerance(expected, REPETITIONS, D * 5))
    assert np.all(np.abs(estimates.mean(axis=0) - TRUE) < k_sigma(D * 5) * np.sqrt(expected / REPETITIONS))


def test_confidence_interval_coverage(sampled_users):
    spec, results = sampled_users
    covered = np.array([(r.ci_low <= TRUE) & (TRUE <= r.ci_high) for r in results])
    coverage = covered.mean(axis=0)
    assert np.all((0.93 <= coverage) & (coverage <= 0.97)), coverage


def test_reported_standard_error_matches_spread(sampled_users):
    spec, results = sampled_users
    reported = np.array([r.std_errors for r in results]).mean(axis=0)
    expected = np.sqrt(sampling_variance(spec, N))
    assert np.all(np.abs(reported / expected - 1) < 0.02)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_sdk_reports_estimate_the_truth(mechanism):
    "The real SDK path end to end: perturb, aggregate JSON payloads, estimate"
    from client_sdk import DeterministicRandom

    spec = load_spec({"name": "t", "mechanism": mechanism, "epsilon": 2.0, "domain": list(range(D))})
    randomizer = mechanism_from_spec(spec, rng=DeterministicRandom(77))
    population = fixed_population()
    result = estimate(spec, [randomizer.perturb(int(v)) for v in population])
    z = k_sigma(D)
    assert np.all(np.abs(result.estimates - TRUE) < z * result.std_errors)
    as_json = result.to_dict()
    assert as_json["n"] == N and len(as_json["values"]) == D
    assert {"value", "estimate", "count", "std_error", "ci_low", "ci_high"} <= set(as_json["values"][0])
    assert as_json["central_dp"]["ldp_to_central_ratio"] > 1


def test_postprocessing_is_beside_the_unbiased_estimate():
    spec = load_spec({"name": "t", "mechanism": "oue", "epsilon": 0.5, "domain": list(range(D))})
    result = estimate(spec, simulate(spec, fixed_population(), np.random.default_rng(3)))
    assert np.any(result.estimates < 0)  # at eps 0.5 and n 4000 the zero value goes negative half the time
    assert np.all(result.norm_sub >= 0) and math.isclose(result.norm_sub.sum(), 1.0)
    row = result.to_dict()["values"][0]
    assert row["estimate"] != row["norm_sub"]


def test_hadamard_decoding_matches_the_explicit_matrix():
    spec = load_spec({"name": "t", "mechanism": "hadamard", "epsilon": 1.0, "domain": list(range(5))})
    batch = simulate(spec, np.arange(5).repeat(40), np.random.default_rng(4))
    agg = aggregate(spec, batch)
    size = len(agg.counts)
    h = np.array([[(-1) ** bin(i & j).count("1") for j in range(size)] for i in range(size)])
    supports = np.array([
        np.sum((1 - 2 * batch["bit"]) == h[v, batch["column"]]) for v in range(5)
    ])
    from estimators.frequency import support_counts

    assert np.allclose(support_counts(spec, agg), supports)


def test_estimate_of_empty_aggregate_raises():
    from estimators import Aggregate, NoReports

    spec = load_spec({"name": "t", "mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b"]})
    with pytest.raises(NoReports):
        estimate_aggregate(spec, Aggregate.empty(spec))


# -- small n: support counts of 0 or n (issue 8 item 13) ------------------------------------------------------------
SPARSE_D, SPARSE_PRESENT = 64, 16  # a Zipf share over 16 values; 48 values nobody has
SPARSE_TRUE = np.concatenate([1 / np.arange(1, SPARSE_PRESENT + 1), np.zeros(SPARSE_D - SPARSE_PRESENT)])
SPARSE_TRUE /= SPARSE_TRUE.sum()
SPARSE_CASES = [(mechanism, n) for mechanism in ("grr", "oue", "olh") for n in (100, 1000, 10_000)]
SPARSE_REPETITIONS = 120


@pytest.mark.parametrize(("mechanism", "n"), SPARSE_CASES, ids=str)
def test_coverage_at_small_n_with_absent_values(mechanism, n):
    """At eps 4 and n = 100, GRR gives about half of the absent values a support count of 0: their intervals must
    still have positive width and cover 0, so that about 5% (not 40%) of them look distinguishable from zero.

    Coverage is checked one-sided (the interval must not be too narrow) against the binomial standard error of
    the coverage estimate over all intervals, k from the Bonferroni bound over the cases."""
    spec = load_spec({"name": "t", "mechanism": mechanism, "epsilon": 4.0, "domain": list(range(SPARSE_D))})
    rng = np.random.default_rng(20261130 + n)
    covered, absent_flagged = [], []
    for _ in range(SPARSE_REPETITIONS):
        result = estimate(spec, simulate(spec, rng.choice(SPARSE_D, size=n, p=SPARSE_TRUE), rng))
        assert np.all(result.ci_high > result.ci_low) and np.all(result.std_errors > 0)
        covered.append((result.ci_low <= SPARSE_TRUE) & (SPARSE_TRUE <= result.ci_high))
        absent_flagged.append(result.ci_low[SPARSE_PRESENT:] > 0)
    coverage, flagged = np.mean(covered), np.mean(absent_flagged)
    k = k_sigma(2 * len(SPARSE_CASES))
    nominal = 0.95
    assert coverage >= nominal - k * math.sqrt(nominal * (1 - nominal) / np.size(covered)), coverage
    assert flagged <= (1 - nominal) + k * math.sqrt(nominal * (1 - nominal) / np.size(absent_flagged)), flagged


def test_support_count_of_zero_or_n_has_positive_standard_error():
    spec = load_spec({"name": "t", "mechanism": "grr", "epsilon": 4.0, "domain": ["a", "b", "c"]})
    result = estimate(spec, [0] * 50)  # every report says "a": support n for "a", 0 for "b" and "c"
    assert np.all(result.std_errors > 0)
    assert np.all(result.ci_high - result.ci_low > 0)
    assert result.ci_low[1] < 0 < result.ci_high[1]


def test_aggregate_of_another_spec_is_refused():
    "The fingerprint check: an aggregate made under epsilon 1 must not be de-biased with epsilon 2's p* and q*"
    from estimators import AggregateMismatch

    spec = load_spec({"name": "t", "mechanism": "oue", "epsilon": 1.0, "domain": list(range(D))})
    other = load_spec({"name": "t", "mechanism": "oue", "epsilon": 2.0, "domain": list(range(D))})
    made = aggregate(spec, simulate(spec, fixed_population(), np.random.default_rng(5)))
    with pytest.raises(AggregateMismatch):
        estimate_aggregate(other, made)


def test_base_cut_threshold_is_bonferroni_over_the_domain():
    "Base-Cut zeroes estimates below Phi^-1(1 - alpha/d) standard errors (T. Wang et al. 2020), not Phi^-1(1 - alpha)"
    from statistics import NormalDist

    from estimators.postprocess import base_cut, base_cut_z

    d = 50
    z_bonferroni, z_single = NormalDist().inv_cdf(1 - 0.05 / d), NormalDist().inv_cdf(1 - 0.05)
    assert base_cut_z(d) == pytest.approx(z_bonferroni)
    between = (z_single + z_bonferroni) / 2  # significant alone, not after the correction for d values
    estimates = np.full(d, between * 0.01)
    assert np.all(base_cut(estimates, np.full(d, 0.01)) == 0)
    assert np.all(base_cut(estimates * 2, np.full(d, 0.01)) == estimates * 2)
