"""Privacy accounting of the distributed noises: each calibration meets its target, checked independently."""

import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from client_sdk.randomness import DeterministicRandom, discrete_gaussian
from estimators.central import analytic_gaussian_sigma, normal_cdf
from estimators.distributed import Shift, calibrate, replace_one_shift
from estimators.distributed.accounting import (
    binomial_delta,
    calibrate_coins,
    calibrate_discrete_gaussian,
    calibrate_discrete_laplace,
    discrete_gaussian_delta,
    discrete_gaussian_pmf,
    discrete_laplace_epsilon,
    dwork_2006_coins,
    gaussian_gap,
)
from estimators.distributed.noise import DIRECT_CONVOLUTION, convolve
from tests.tolerances import k_sigma

TARGETS = [(1.0, 1e-6, 1), (0.5, 1e-5, 1), (1.0, 1e-6, 16), (2.0, 1e-9, 3)]


def hockey_stick(p: np.ndarray, q_shifted: np.ndarray, epsilon: float) -> float:
    "sup over events of P(S) - e^eps Q(S), from two pmfs on one grid"
    return float(np.clip(p - math.exp(epsilon) * q_shifted, 0, None).sum())


@pytest.mark.parametrize("sigma2,epsilon,sensitivity", [(2.0, 0.5, 1), (17.9, 1.0, 1), (300.0, 1.0, 16)])
def test_theorem_7_equals_the_hockey_stick_divergence(sigma2, epsilon, sensitivity):
    "CKS 2020 Theorem 7's closed form against the divergence of N_Z(0, s2) and its shift, summed directly"
    half = int(45 * math.sqrt(sigma2)) + sensitivity
    grid = np.arange(-half, half + 1)
    p = discrete_gaussian_pmf(sigma2, grid)
    q = discrete_gaussian_pmf(sigma2, grid - sensitivity)
    direct = hockey_stick(p, q, epsilon)
    assert discrete_gaussian_delta(sigma2, epsilon, sensitivity) == pytest.approx(direct, rel=1e-9, abs=1e-15)


def test_the_discrete_gaussian_approaches_the_continuous_one():
    "At a large sigma the exact discrete delta is the continuous one (Balle & Wang 2018, Theorem 8)"
    sigma, epsilon = 40.0, 0.2
    a, b = 1 / (2 * sigma), epsilon * sigma
    continuous = normal_cdf(a - b) - math.exp(epsilon) * normal_cdf(-a - b)
    assert discrete_gaussian_delta(sigma * sigma, epsilon, 1) == pytest.approx(continuous, rel=1e-6)


@pytest.mark.parametrize("epsilon,delta,sensitivity", TARGETS)
def test_discrete_gaussian_calibration_meets_its_target_and_stays_near_the_continuous(epsilon, delta, sensitivity):
    sigma2 = calibrate_discrete_gaussian(epsilon, delta, sensitivity)
    assert discrete_gaussian_delta(float(sigma2), epsilon, sensitivity) <= delta
    assert abs(gaussian_gap(epsilon, delta, sensitivity)) < 0.01


@pytest.mark.parametrize("epsilon,delta,sensitivity", [(4.0, 1e-6, 1), (8.0, 1e-9, 1), (10.0, 1e-6, 1),
                                                       (2.0, 1e-5, 1), (3.0, 1e-6, 2)])
def test_discrete_gaussian_calibration_is_the_smallest_passing_point_of_its_grid(epsilon, delta, sensitivity):
    """delta is not monotone in sigma2: at (4, 1e-6, 1) sigma2 = 1.37 passes (delta 8.95e-7) where the old ladder
    returned 1.4248.  The grid: multiples of h = 2**max(floor(log2 s) - 10, -10), s the continuous sigma^2; every
    grid point from a quarter of s up to the answer fails, and the answer passes"""
    sigma2 = calibrate_discrete_gaussian(epsilon, delta, sensitivity)
    continuous = analytic_gaussian_sigma(float(sensitivity), epsilon, delta) ** 2
    step = Fraction(2) ** max(math.floor(math.log2(continuous)) - 10, -10)
    assert sigma2 % step == 0 and discrete_gaussian_delta(float(sigma2), epsilon, sensitivity) <= delta
    below = [float(k * step) for k in range(math.floor(continuous / 4 / step), int(sigma2 / step))]
    assert all(discrete_gaussian_delta(float(s), epsilon, sensitivity) > delta for s in below)
    if (epsilon, delta, sensitivity) == (4.0, 1e-6, 1):
        assert sigma2 <= Fraction(137, 100)


@pytest.mark.parametrize("epsilon,sensitivity", [(1.0, 1), (0.3, 1), (1.0, 16), (0.7, 5)])
def test_discrete_laplace_is_pure_epsilon(epsilon, sensitivity):
    scale = calibrate_discrete_laplace(epsilon, sensitivity)
    assert discrete_laplace_epsilon(scale, sensitivity) <= epsilon
    assert scale - Fraction(sensitivity) / Fraction(epsilon) < Fraction(1, 1024)
    # the largest pmf ratio at a shift of the sensitivity, computed on the pmf itself
    grid = np.arange(-200, 201)
    log_pmf = -np.abs(grid) / float(scale)
    assert np.max(log_pmf[sensitivity:] - log_pmf[:-sensitivity]) <= epsilon + 1e-12


@pytest.mark.parametrize("coins,epsilon,sensitivity", [(40, 1.0, 1), (85, 1.0, 1), (200, 0.5, 3)])
def test_binomial_delta_against_exact_binomial_coefficients(coins, epsilon, sensitivity):
    k = np.arange(0, coins + sensitivity + 1)
    p = np.array([math.comb(coins, int(i)) if i <= coins else 0 for i in k], dtype=float) / 2.0**coins
    q = np.array([math.comb(coins, int(i - sensitivity)) if 0 <= i - sensitivity <= coins else 0 for i in k],
                 dtype=float) / 2.0**coins
    assert binomial_delta(coins, epsilon, sensitivity) == pytest.approx(hockey_stick(p, q, epsilon), rel=1e-9)
    assert binomial_delta(coins, epsilon, sensitivity) == pytest.approx(hockey_stick(q, p, epsilon), rel=1e-9)


@pytest.mark.parametrize("epsilon,delta,sensitivity", TARGETS)
def test_coin_calibration_is_the_smallest_count_and_beats_the_2006_bound(epsilon, delta, sensitivity):
    coins = calibrate_coins(epsilon, delta, sensitivity)
    assert coins % 2 == 0  # N/2 is subtracted: an integer
    assert binomial_delta(coins, epsilon, sensitivity) <= delta < binomial_delta(coins - 2, epsilon, sensitivity)
    if sensitivity == 1:
        assert coins <= dwork_2006_coins(epsilon, delta)
    # a binomial of the same privacy has about the analytic Gaussian's variance
    sigma = analytic_gaussian_sigma(float(sensitivity), epsilon, delta)
    assert 0.8 < coins / 4 / sigma**2 < 1.5


def two_coordinate_hockey_stick(pmf: np.ndarray, epsilon: float) -> float:
    "delta of independent noise on two coordinates, each shifted by +1: summed over every pair of the grid"
    p = np.outer(pmf, pmf)
    shifted = np.zeros_like(pmf)
    shifted[1:] = pmf[:-1]
    q = np.outer(shifted, shifted)
    return float(np.clip(p - math.exp(epsilon) * q, 0, None).sum())


@pytest.mark.parametrize("sigma2,epsilon", [(4.0, 0.5), (35.7, 1.0), (120.0, 2.0)])
def test_two_coordinate_discrete_gaussian_delta_is_the_hockey_stick_over_pairs(sigma2, epsilon):
    "A histogram under replace-one (two buckets move by 1): the sum-based formula against the 2-D sum over pairs"
    half = int(45 * math.sqrt(sigma2)) + 2
    pmf = discrete_gaussian_pmf(sigma2, np.arange(-half, half + 1))
    direct = two_coordinate_hockey_stick(pmf / pmf.sum(), epsilon)
    assert discrete_gaussian_delta(sigma2, epsilon, Shift(2, 1)) == pytest.approx(direct, rel=1e-7, abs=1e-15)


@pytest.mark.parametrize("coins,epsilon", [(40, 1.0), (148, 1.0), (300, 0.5)])
def test_two_coordinate_binomial_delta_is_the_hockey_stick_over_pairs(coins, epsilon):
    "Exact binomial coefficients on both coordinates; the truncated window's left-out mass is added (<= 2e-30)"
    p = np.array([math.comb(coins, i) for i in range(coins + 2)] + [0], dtype=float) / 2.0**coins
    p[coins + 1] = 0.0
    direct = two_coordinate_hockey_stick(p, epsilon)
    assert binomial_delta(coins, epsilon, Shift(2, 1)) == pytest.approx(direct, rel=1e-9, abs=3e-30)


@pytest.mark.parametrize("prio3,kwargs,shift", [
    ("count", {}, Shift(1, 1)), ("sum", {"max_measurement": 100}, Shift(1, 100)), ("histogram", {}, Shift(2, 1)),
    ("multihot", {"max_weight": 3}, Shift(6, 1)), ("sumvec", {"length": 4, "max_measurement": 7}, Shift(4, 7))])
def test_the_replace_one_shift_of_each_prio3_type(prio3, kwargs, shift):
    "decisions: histogram L1 = 2, L2 = sqrt 2; a count 1; a sum of [0, M] M"
    assert replace_one_shift(prio3, **kwargs) == shift
    assert (shift.l1, shift.l2) == (shift.coordinates * shift.size, math.sqrt(shift.coordinates) * shift.size)


@pytest.mark.parametrize("mode", ["gaussian", "laplace", "coins"])
def test_a_histogram_calibrated_for_one_bucket_is_not_private_under_replace_one(mode):
    "The calibration before replace-one (one bucket by 1) misses the target once two buckets move; the new one meets it"
    epsilon, delta = 1.0, 1e-6
    old = calibrate(mode, epsilon=epsilon, delta=delta, sensitivity=1)
    new = calibrate(mode, epsilon=epsilon, delta=delta, sensitivity=Shift(2, 1))
    stale = type(old)(old.kind, old.parameter, Shift(2, 1))  # the old noise, accounted for what is released
    achieved = stale.privacy(epsilon)
    assert achieved[0] > epsilon or achieved[1] > delta
    achieved = new.privacy(epsilon)
    assert achieved[0] <= epsilon and achieved[1] <= delta


@pytest.mark.parametrize("mode", ["gaussian", "laplace", "coins"])
@pytest.mark.parametrize("epsilon,delta,sensitivity", TARGETS)
def test_a_configured_campaign_meets_its_target(mode, epsilon, delta, sensitivity):
    "(epsilon, delta) recomputed from each noise mode's parameters alone is within the campaign's target"
    noise = calibrate(mode, epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    achieved_epsilon, achieved_delta = noise.privacy(epsilon)
    assert achieved_epsilon <= epsilon and achieved_delta <= delta


def test_calibration_rejects_bad_parameters():
    with pytest.raises(ValueError, match="sensitivity"):
        calibrate("gaussian", epsilon=1, delta=1e-6, sensitivity=0)
    with pytest.raises(ValueError, match="delta"):
        calibrate("gaussian", epsilon=1, delta=0, sensitivity=1)
    with pytest.raises(ValueError, match="mode"):
        calibrate("uniform", epsilon=1, delta=1e-6, sensitivity=1)
    with pytest.raises(ValueError, match="coordinates"):
        calibrate("coins", epsilon=1, delta=1e-6, sensitivity=Shift(0, 1))


def test_empirical_audit_of_the_aggregator_noise_on_neighbouring_sums():
    """One aggregator's discrete Gaussian noise (the other may collude) on sums s and s + 1: for every event
    {release >= t} and {release <= t}, P(M(s) in S) <= e^eps P(M(s+1) in S) + delta, within k standard errors of
    the two empirical frequencies"""
    epsilon, delta = 1.0, 1e-6
    sigma2 = calibrate_discrete_gaussian(epsilon, delta, 1)
    rng = DeterministicRandom(11)
    draws = 20_000
    low = np.array([discrete_gaussian(rng, sigma2) for _ in range(draws)]) + 100
    high = np.array([discrete_gaussian(rng, sigma2) for _ in range(draws)]) + 101
    thresholds = range(80, 123)
    k = k_sigma(4 * len(thresholds))
    for t in thresholds:
        for first, second in ((low, high), (high, low)):
            for event in (lambda x, t=t: x >= t, lambda x, t=t: x <= t):
                p, q = event(first).mean(), event(second).mean()
                tolerance = k * (math.sqrt(p * (1 - p) / draws) + math.exp(epsilon) * math.sqrt(q * (1 - q) / draws))
                assert p <= math.exp(epsilon) * q + delta + tolerance + 1 / draws


def test_aggregator_noise_is_calibrated_and_its_interval_computed_without_scipy():
    "scipy.stats costs a second of CPU per process: the leader, the helper and the report path pay it only for coins"
    code = ("import sys; from estimators.distributed import calibrate; "
            "from estimators.distributed.noise import noise_halfwidth; "
            "noise = calibrate('gaussian', epsilon=1.0, delta=1e-6, sensitivity=1); "
            "assert noise_halfwidth(*noise.noise_pmf(), 0.95) > 0; "
            "print(sorted(name for name in sys.modules if name.split('.')[0] == 'scipy'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("lengths", [(7, 3), (DIRECT_CONVOLUTION + 5, DIRECT_CONVOLUTION + 900)])
def test_the_noise_convolution_matches_the_direct_sum(lengths):
    rng = np.random.default_rng(3)
    a, b = (rng.random(n) for n in lengths)
    a, b = a / a.sum(), b / b.sum()
    got = convolve(a, b)
    assert got.shape == (sum(lengths) - 1,) and (got >= 0).all()
    np.testing.assert_allclose(got, np.convolve(a, b), rtol=0, atol=1e-15)
