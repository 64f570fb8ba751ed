"""Coverage grid (issue 22): intervals hold where counts are sparse, never inverted or of zero width, and standard
errors match the spread of the estimates for the target they state.

Frequency oracles and RAPPOR's direct encodings: for users drawn from a population the support count of a value is
Binomial(n, pi), pi = q* + f (p* - q*), for every oracle (each report supports it independently), so coverage and
E[SE] are computed exactly from the binomial pmf (within 15 sd of its mean, where all but ~1e-40 of the mass
lies), with the mechanisms' own quantized (p*, q*).  A deterministic interval's coverage moves in steps of one
pmf atom, so where a single count holds more than 2.5% of the mass (n q* well below 1: an absent value is seen 0
times most of the time) the coverage cannot sit below 0.975: the upper bound is 0.975 plus the largest atom.
E[SE] / SD is checked where at least one support is expected (``MIN_EXPECTED_SUPPORTS``).

Means: the vectorised simulators (``estimators.simulate``, the SDK's distribution), a fresh population per
trial, n = 100 and 1000; the tolerance is the Monte-Carlo standard error of a coverage estimate,
sqrt(0.95 * 0.05 / trials), times k_sigma over the grid's comparisons beyond [0.93, 0.975], and for SE / SD the
standard error of a sample standard deviation.
"""

import math

import numpy as np
import pytest
from scipy import stats

from client_sdk import load_spec, mechanism_from_spec
from client_sdk.rappor import RapporParams
from estimators import estimate_aggregate
from estimators.frequency import reported_std_errors
from estimators.intervals import frequency_interval, support_std_errors
from estimators.simulate import simulate
from tests.tolerances import k_sigma

CONFIDENCE = 0.95
EPSILONS = (0.5, 1.0, 4.0, 8.0)
SIZES = (100, 1_000, 100_000)
DOMAINS = {"dense": 4, "sparse": 4096}
ORACLES = ("grr", "sue", "oue", "olh", "hadamard")
COVERAGE_BAND = (0.93, 0.975)
SE_BAND = (0.9, 1.15)
# Below one expected support (or non-support) a count of 0 or 1 cannot tell f = 0 from f = 0.5 when p* - q* is
# tiny (GRR at d = 4096, n = 100), so no plug-in standard error matches the spread of both; the interval, which
# the report's marks use, is checked in every cell
MIN_EXPECTED_SUPPORTS = 1.0


def binomial_window(n, pi):
    "The counts holding all but a negligible part of Binomial(n, pi), and their pmf"
    mean, sd = n * pi, math.sqrt(n * pi * (1 - pi))
    x = np.arange(max(0, math.floor(mean - 15 * sd - 10)), min(n, math.ceil(mean + 15 * sd + 10)) + 1)
    return x, stats.binom.pmf(x, n, pi)


def check_cell(p, q, n, f, label):
    "Exact coverage, shape of every interval, and E[SE] / SD for target population at true frequency f"
    pi = q + f * (p - q)
    x, pmf = binomial_window(n, pi)
    low, high = frequency_interval(x, n, p, q, CONFIDENCE)
    estimates = (x / n - q) / (p - q)
    assert np.all(high > low), f"{label}: a zero-width or inverted interval"
    assert np.all((low <= estimates) & (estimates <= high)), f"{label}: an interval without its estimate"
    coverage = float(pmf[(low <= f) & (f <= high)].sum())
    upper = COVERAGE_BAND[1] + float(pmf.max())
    assert COVERAGE_BAND[0] <= coverage <= upper, f"{label}: coverage {coverage:.4f}"
    if n * min(pi, 1 - pi) >= MIN_EXPECTED_SUPPORTS:
        sd = math.sqrt(pi * (1 - pi) / n) / abs(p - q)
        expected_se = float((pmf * support_std_errors(x / n, n, p, q)).sum())
        assert SE_BAND[0] <= expected_se / sd <= SE_BAND[1], f"{label}: E[SE]/SD {expected_se / sd:.3f}"
    return coverage


def frequencies(d):
    "Absent, typical and large values"
    return (0.0, 1.0 / d, 0.5)


@pytest.mark.parametrize("mechanism", ORACLES)
def test_frequency_oracle_grid(mechanism):
    for kind, d in DOMAINS.items():
        for epsilon in EPSILONS:
            spec = load_spec({"name": "g", "mechanism": mechanism, "epsilon": epsilon, "domain": list(range(d))})
            device = mechanism_from_spec(spec)
            p, q = device.p_star, device.q_star
            for n in SIZES:
                for f in frequencies(d):
                    check_cell(p, q, n, f, f"{mechanism} eps {epsilon} {kind} d={d} n={n} f={f:.4g}")


def test_the_issue_cells_that_undercovered_now_cover():
    "auto -> GRR at eps 8, d = 4096, n = 1000 covered an absent value 0.868 of the time under plain Wilson"
    for epsilon, d, n in ((8.0, 4096, 1000), (4.0, 4096, 1000), (4.0, 160, 100), (0.5, 1024, 1000)):
        device = mechanism_from_spec(load_spec({"name": "g", "mechanism": "grr", "epsilon": epsilon,
                                                "domain": list(range(d))}))
        assert check_cell(device.p_star, device.q_star, n, 0.0, f"grr {epsilon} {d} {n}") >= COVERAGE_BAND[0]


def test_reported_target_standard_error_matches_the_fixed_data_spread():
    "Target reported: the users are fixed (n f of them hold the value), only the privacy noise varies"
    for mechanism in ("grr", "oue"):
        for epsilon in EPSILONS:
            d = 8
            device = mechanism_from_spec(load_spec({"name": "g", "mechanism": mechanism, "epsilon": epsilon,
                                                    "domain": list(range(d))}))
            p, q = device.p_star, device.q_star
            for n in (1_000, 100_000):
                holders = n // 4
                a, pmf_a = binomial_window(holders, p)
                b, pmf_b = binomial_window(n - holders, q)
                pmf = np.convolve(pmf_a, pmf_b)
                x = np.arange(len(pmf)) + a[0] + b[0]
                sd = math.sqrt(holders * p * (1 - p) + (n - holders) * q * (1 - q)) / n / (p - q)
                expected_se = float((pmf * reported_std_errors(x / n, n, p, q)).sum())
                assert SE_BAND[0] <= expected_se / sd <= SE_BAND[1], (mechanism, epsilon, n, expected_se / sd)


RAPPOR_DIRECT = (RapporParams(k=2, h=1, m=1, p=0.5, q=0.75, f=0.5), RapporParams(k=1, h=1, m=1, p=0.25, q=0.75,
                                                                                  f=0.5))


@pytest.mark.parametrize("params", RAPPOR_DIRECT, ids=["basic", "boolean"])
def test_rappor_direct_grid(params):
    for n in SIZES:
        for f in (0.0, 0.01, 0.5, 1.0):
            check_cell(params.p11, params.p01, n, f, f"rappor {params} n={n} f={f}")


def test_the_issue_rappor_example_is_not_inverted():
    "basic k=2, h=1, m=1, f=.5, p=.5, q=.75, counts [[20000, 14000, 10800]] gave b: CI [0.0, -0.125]"
    from estimators.rappor.decode import decode_rappor
    from tests.estimators.test_rappor_decode import spec_for

    spec = spec_for(candidates=["a", "b"], k=2, h=1, m=1, encoding="basic", p=0.5, q=0.75, f=0.5)
    for row in decode_rappor(spec, np.array([[20000, 14000, 10800]])).estimates:
        assert row.ci_low < row.proportion < row.ci_high


# -- means ---------------------------------------------------------------------------------------------------------
MEAN_MECHANISMS = ("laplace", "duchi", "piecewise", "hybrid")
# n = 1e5 is not simulated for means (1e7 simulated users per cell): SE = sd(Z)/sqrt(n) is the same formula at
# every n and its normal interval only gets better with n; the small-n cells are where it could fail.  Duchi at
# n = 1e5 is computed exactly (test_duchi_at_large_n_exactly)
MEAN_TRIALS = {100: 2000, 1_000: 2000}
MEAN_K = k_sigma(2 * 2 * len(EPSILONS) * len(MEAN_TRIALS))  # coverage and SE/SD, per population, eps and n
POPULATIONS = {
    "spread": lambda rng, size: rng.uniform(0.0, 10.0, size),
    "skewed": lambda rng, size: np.where(rng.random(size) < 0.9, 0.0, 10.0),  # most users at one end
}


def mean_trials(spec, population, n, trials, rng):
    "Means, standard errors and interval shapes of ``trials`` campaigns of n users drawn afresh"
    from estimators.aggregation import aggregate
    from estimators.registry import ReportBatch

    chunk = max(1, 2_000_000 // n)
    results = []
    for start in range(0, trials, chunk):
        size = min(chunk, trials - start)
        values = population(rng, n * size)
        batch = simulate(spec, values, rng)
        for i in range(size):
            part = ReportBatch(batch.mechanism, n, {k: v[i * n:(i + 1) * n] for k, v in batch.columns.items()})
            results.append(estimate_aggregate(spec, aggregate(spec, part)))
    return results


@pytest.mark.parametrize("mechanism", MEAN_MECHANISMS)
def test_mean_grid(mechanism):
    rng = np.random.default_rng(2022)
    for name, population in POPULATIONS.items():
        mean = 5.0 if name == "spread" else 1.0
        for epsilon in EPSILONS:
            spec = load_spec({"name": "m", "mechanism": mechanism, "epsilon": epsilon, "range": [0, 10]})
            for n, trials in MEAN_TRIALS.items():
                results = mean_trials(spec, population, n, trials, rng)
                means = np.array([r.mean for r in results])
                low = np.array([r.ci_low for r in results])
                high = np.array([r.ci_high for r in results])
                se = np.array([r.std_error for r in results])
                label = f"{mechanism} eps {epsilon} {name} n={n}"
                assert np.all(high > low), f"{label}: a zero-width or inverted interval"
                coverage = float(np.mean((low <= mean) & (mean <= high)))
                slack = MEAN_K * math.sqrt(0.95 * 0.05 / trials)
                assert COVERAGE_BAND[0] - slack <= coverage <= COVERAGE_BAND[1] + slack, f"{label}: {coverage:.3f}"
                ratio = float(np.sqrt(np.mean(se**2)) / np.std(means))
                sd_slack = MEAN_K / math.sqrt(2 * (trials - 1))  # relative SE of a sample sd
                assert SE_BAND[0] - sd_slack <= ratio <= SE_BAND[1] + sd_slack, f"{label}: SE/SD {ratio:.3f}"


# Small n and populations at or near a bound (issue 31): n = 30 and 300, point masses at either bound, 2% at the
# top, 10 - Exp(0.1), Exp(0.1) near 0, and users near both ends.  Duchi's count of ones is Binomial(n, pi) with
# pi = (1 + c E[t]) / 2, so its coverage may exceed 0.975 by the largest atom of that pmf, as the frequency cells.
# For the others a sample at or near a bound cannot rule out unseen users at the other bound (2% at 10, n = 30:
# none in 55% of samples), so the interval reaches towards the middle as Wilson's does and almost never misses on
# that side; with Piecewise's reports that mostly stay in a band of width ~ 2 e^(-eps/2) around t (the count of
# those that leave it is a small binomial count at eps >= 6) the other side rarely misses either.  There only the
# lower end of the band is held (docs/mechanisms.md gives the measured over-coverage)
NEAR_BOUND = {
    "at 0": (lambda rng, size: np.zeros(size), 0.0),
    "at 10": (lambda rng, size: np.full(size, 10.0), 10.0),
    "2% at 10": (lambda rng, size: np.where(rng.random(size) < 0.02, 10.0, 0.0), 0.2),
    "10-Exp(0.1)": (lambda rng, size: 10.0 - rng.exponential(0.1, size), 10 - 0.1 * (1 - math.exp(-100))),
    "Exp(0.1)": (lambda rng, size: rng.exponential(0.1, size), 0.1 * (1 - math.exp(-100))),
}
SPREAD_TO_BOTH = {  # the whole band is held
    "uniform": (POPULATIONS["spread"], 5.0),
    "both ends": (lambda rng, size: np.where(rng.random(size) < 0.5, 0.0, 10.0) + np.where(
        rng.random(size) < 0.5, 1.0, -1.0) * rng.exponential(0.1, size), 5.0),
}
SMALL_EPSILONS = (0.1, 1.0, 4.0, 8.0, 12.0, 20.0)
SMALL_CELLS = [(n, population) for n in (30,) for population in {**NEAR_BOUND, **SPREAD_TO_BOTH}] + [
    (300, "2% at 10"), (300, "10-Exp(0.1)")]
SMALL_TRIALS = 1500
SMALL_K = k_sigma(len(MEAN_MECHANISMS) * len(SMALL_EPSILONS) * len(SMALL_CELLS))


def duchi_atom(spec, n, truth):
    "The largest atom of Binomial(n, pi), the count of ones whose interval is the mean's"
    device = mechanism_from_spec(spec)
    slope = float(getattr(device, "duchi", device).slope)  # Hybrid at eps <= 0.61 is its Duchi branch
    probability = (1 + slope * (truth / 5 - 1)) / 2
    return float(stats.binom.pmf(np.arange(n + 1), n, probability).max())


def test_the_agresti_coull_hull_holds_where_wilson_dips():
    "estimators.intervals: Wilson with the boundary correction covers 0.921 at n = 30, pi = 0.1179; the hull >= 0.933"
    from estimators.intervals import support_interval

    for n, figure in ((30, 0.933), (100, 0.938), (1000, 0.944)):
        x = np.arange(n + 1)
        low, high = support_interval(x, n, CONFIDENCE, agresti_coull=True)
        coverage = [stats.binom.pmf(x, n, pi)[(low <= pi) & (pi <= high)].sum() for pi in np.linspace(0, 1, 2001)]
        assert round(min(coverage), 3) >= figure, (n, min(coverage))
    x = np.arange(31)
    low, high = support_interval(x, 30, CONFIDENCE)
    assert round(float(stats.binom.pmf(x, 30, 0.1179)[(low <= 0.1179) & (0.1179 <= high)].sum()), 3) == 0.921


@pytest.mark.filterwarnings("ignore::client_sdk.errors.PrivacyWarning")
@pytest.mark.parametrize("mechanism", ["duchi", "hybrid"])
def test_two_valued_means_cover_exactly_at_every_mean(mechanism):
    """Duchi, and Hybrid at eps <= 0.61: the count of ones is Binomial(n, (1 + c E[t]) / 2) whatever the
    population, so coverage is exact for every mean; 81 means from bound to bound, n 30 to 300 (Wald covered 0.26
    at eps 12, n 30 near the top; Wilson alone 0.921 at n = 30, pi = 0.1179)"""
    from estimators.aggregation import Aggregate

    epsilons = (0.1, 0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 12.0, 20.0) if mechanism == "duchi" else (0.1, 0.5, 0.61)
    for epsilon in epsilons:
        spec = load_spec({"name": "m", "mechanism": mechanism, "epsilon": epsilon, "range": [0, 10]})
        device = mechanism_from_spec(spec)
        slope = float(getattr(device, "duchi", device).slope)
        for n in (30, 100, 300):
            ones = np.arange(n + 1)
            statistics = ([k] if mechanism == "duchi" else [n, k, 0, 0, 0] for k in ones.tolist())
            results = [estimate_aggregate(spec, Aggregate(spec.mechanism, spec.fingerprint, n,
                                                          np.array(statistic, dtype=object)))
                       for statistic in statistics]
            low = np.array([r.ci_low for r in results])
            high = np.array([r.ci_high for r in results])
            for truth in np.linspace(0.0, 10.0, 81):
                pmf = stats.binom.pmf(ones, n, (1 + slope * (truth / 5 - 1)) / 2)
                coverage = float(pmf[(low <= truth) & (truth <= high)].sum())
                upper = COVERAGE_BAND[1] + float(pmf.max())
                assert COVERAGE_BAND[0] <= coverage <= upper, f"{mechanism} eps {epsilon} n={n} mean {truth}: " \
                                                              f"{coverage:.4f}"


@pytest.mark.filterwarnings("ignore::client_sdk.errors.PrivacyWarning")  # eps 12 and 20: the spec allows them
@pytest.mark.parametrize("mechanism", MEAN_MECHANISMS)
def test_mean_grid_at_small_n_and_near_the_bounds(mechanism):
    "Issue 31: Duchi at eps 6, n 30, 2% at 10 covered 0.483; Piecewise and Hybrid at eps 12 about 0.47"
    populations = {**NEAR_BOUND, **SPREAD_TO_BOTH}
    slack = SMALL_K * math.sqrt(0.95 * 0.05 / SMALL_TRIALS)
    for epsilon in SMALL_EPSILONS:
        spec = load_spec({"name": "m", "mechanism": mechanism, "epsilon": epsilon, "range": [0, 10]})
        binary = mechanism == "duchi" or (mechanism == "hybrid" and mechanism_from_spec(spec).alpha == 0)
        for n, name in SMALL_CELLS:
            draw, truth = populations[name]
            rng = np.random.default_rng([31, n, int(epsilon * 10), len(name)])
            results = mean_trials(spec, draw, n, SMALL_TRIALS, rng)
            low = np.array([r.ci_low for r in results])
            high = np.array([r.ci_high for r in results])
            means = np.array([r.mean for r in results])
            label = f"{mechanism} eps {epsilon} n={n} {name}"
            assert np.all((low < high) & (low <= means) & (means <= high)), f"{label}: an interval without its mean"
            coverage = float(np.mean((low <= truth) & (truth <= high)))
            if binary:
                upper = COVERAGE_BAND[1] + duchi_atom(spec, n, truth)
            else:
                upper = COVERAGE_BAND[1] if name in SPREAD_TO_BOTH else 1.0
            assert COVERAGE_BAND[0] - slack <= coverage <= upper + slack, f"{label}: coverage {coverage:.3f}"


@pytest.mark.parametrize("n", [1, 2, 3])
def test_hybrid_in_its_duchi_range_never_gives_a_zero_width_interval(n):
    "At eps <= 0.61 Hybrid is Duchi: its variance is never below C^2 - m^2, so equal codes do not give SE = 0"
    spec = load_spec({"name": "m", "mechanism": "hybrid", "epsilon": 0.5, "range": [0, 10]})
    rng = np.random.default_rng(61)
    results = mean_trials(spec, POPULATIONS["spread"], n, 400, rng)
    assert all(r.ci_high > r.ci_low for r in results)


@pytest.mark.parametrize("count", [1, 2, 3])
@pytest.mark.parametrize("tail", [0.005, 0.025, 0.05])
def test_the_poisson_bound_is_scipys(count, tail):
    from scipy.special import gammaincinv

    from estimators.intervals import poisson_lower_bound

    assert poisson_lower_bound(count, tail) == pytest.approx(float(gammaincinv(count, tail)), rel=1e-10)


def test_duchi_at_large_n_exactly():
    """n = 1e5 for Duchi without simulation: for users drawn from a population each code is 1 with probability
    (1 + c E[t]) / 2, so the aggregate (the count of ones) is exactly binomial; every count within 8 sd (all but
    ~1e-15 of the mass) goes through the estimator"""
    from estimators.aggregation import Aggregate

    n = 100_000
    for epsilon in EPSILONS:
        spec = load_spec({"name": "m", "mechanism": "duchi", "epsilon": epsilon, "range": [0, 10]})
        slope = float(mechanism_from_spec(spec).slope)
        for mean_t in (0.0, -0.8):  # the spread population's mean and the skewed one's
            truth = (mean_t + 1) * 5
            probability = (1 + slope * mean_t) / 2
            sd = math.sqrt(n * probability * (1 - probability))
            ones = np.arange(math.floor(n * probability - 8 * sd), math.ceil(n * probability + 8 * sd) + 1)
            pmf = stats.binom.pmf(ones, n, probability)
            results = [estimate_aggregate(spec, Aggregate(spec.mechanism, spec.fingerprint, n,
                                                          np.array([int(k)], dtype=object))) for k in ones]
            low = np.array([r.ci_low for r in results])
            high = np.array([r.ci_high for r in results])
            assert np.all(high > low)
            coverage = float(pmf[(low <= truth) & (truth <= high)].sum())
            assert COVERAGE_BAND[0] <= coverage <= COVERAGE_BAND[1], (epsilon, mean_t, coverage)
            means = np.array([r.mean for r in results])
            spread = math.sqrt(float((pmf * (means - truth) ** 2).sum()))
            expected_se = float((pmf * np.array([r.std_error for r in results])).sum())
            assert SE_BAND[0] <= expected_se / spread <= SE_BAND[1], (epsilon, mean_t, expected_se / spread)
