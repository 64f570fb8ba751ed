"""estimators.composition: basic composition by hand, and the privacy-loss-distribution figure against closed forms
(k Gaussian releases are one Gaussian of sigma / sqrt(k), Balle & Wang's delta; one and two Laplace releases;
k randomized responses, Kairouz-Oh-Viswanath's exact sum)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from scipy import integrate

from estimators.composition import (
    ApproxRelease,
    DiscreteGaussianRelease,
    DiscreteLaplaceRelease,
    GaussianRelease,
    LaplaceRelease,
    basic_composition,
    compose,
    gaussian_delta,
    gaussian_epsilon,
    pld_composition,
    pld_delta,
    shuffled_release,
)
from estimators.distributed.accounting import Shift, discrete_gaussian_delta
from estimators.shuffle import amplified_epsilon

GRID = 1e-4  # dp-accounting's loss grid: its pessimistic rounding costs at most about this per release in epsilon


def balle_wang_delta(sigma: float, epsilon: float) -> float:
    "Written out here (independent of the module): Phi(1/(2s) - eps s) - e^eps Phi(-1/(2s) - eps s)"
    phi = lambda x: 0.5 * math.erfc(-x / math.sqrt(2))  # noqa: E731
    return phi(1 / (2 * sigma) - epsilon * sigma) - math.exp(epsilon) * phi(-1 / (2 * sigma) - epsilon * sigma)


def test_basic_composition_is_the_sum_by_hand():
    releases = [ApproxRelease(0.5), ApproxRelease(1.0, 1e-7), LaplaceRelease(2.0, sensitivity=1.0),
                GaussianRelease(4.0, 1e-6)]
    spent = basic_composition(releases)
    by_hand = 0.5 + 1.0 + 0.5 + gaussian_epsilon(4.0, 1e-6)
    assert spent.epsilon == pytest.approx(by_hand, rel=1e-12) and spent.delta == pytest.approx(1e-7 + 1e-6)
    assert spent.releases == 4 and not spent.exact
    assert balle_wang_delta(4.0, gaussian_epsilon(4.0, 1e-6)) <= 1e-6 * (1 + 1e-9)


@pytest.mark.parametrize("k, sigma", [(10, 5.0), (365, 30.0), (365, 80.0)])
def test_k_gaussian_releases_are_one_gaussian_of_sigma_over_root_k(k, sigma):
    releases = [GaussianRelease(sigma, 1e-8)] * k
    for epsilon in (0.5, 1.0, 2.0):
        exact = balle_wang_delta(sigma / math.sqrt(k), epsilon)
        ours = pld_delta(releases, epsilon=epsilon)
        assert exact <= ours * (1 + 1e-6)  # pessimistic: never below the exact figure
        # within the grid's rounding (and the tail mass dp-accounting truncates, below 1e-12)
        assert ours <= balle_wang_delta(sigma / math.sqrt(k), epsilon - k * GRID) + 1e-12
    spent = pld_composition(releases, delta=1e-6)
    assert spent.exact and gaussian_epsilon(sigma / math.sqrt(k), 1e-6) <= spent.epsilon * (1 + 1e-6)
    assert spent.epsilon <= gaussian_epsilon(sigma / math.sqrt(k), 1e-6) + k * GRID
    assert gaussian_delta(sigma / math.sqrt(k), 1.0) == pytest.approx(balle_wang_delta(sigma / math.sqrt(k), 1.0))


def laplace_delta(epsilon0: float, epsilon: float) -> float:
    "Exact delta of one Laplace release of epsilon0 at any epsilon: 1 - e^((eps - eps0)/2) for |eps| <= eps0"
    if epsilon >= epsilon0:
        return 0.0
    if epsilon <= -epsilon0:
        return 1 - math.exp(epsilon)
    return 1 - math.exp((epsilon - epsilon0) / 2)


def two_laplace_delta(epsilon0: float, epsilon: float) -> float:
    """Exact delta of two Laplace releases: E over the first's loss L of the second's delta at eps - L.  Under
    Lap(0, b), b = 1/eps0, L = eps0 with probability 1/2, -eps0 with e^-eps0 / 2, eps0 (1 - 2x) for x in (0, 1)"""
    b = 1 / epsilon0
    continuous, _ = integrate.quad(lambda x: math.exp(-x / b) / (2 * b) * laplace_delta(epsilon0, epsilon - epsilon0
                                                                                          * (1 - 2 * x)), 0, 1,
                                   epsabs=1e-14, epsrel=1e-12, limit=200)
    return (laplace_delta(epsilon0, epsilon - epsilon0) / 2 + math.exp(-epsilon0) / 2
            * laplace_delta(epsilon0, epsilon + epsilon0) + continuous)


@pytest.mark.parametrize("epsilon0", [0.5, 1.0])
def test_one_and_two_laplace_releases_against_the_closed_form(epsilon0):
    one, two = [LaplaceRelease(1 / epsilon0)], [LaplaceRelease(1 / epsilon0)] * 2
    for epsilon in (0.1 * epsilon0, 0.5 * epsilon0, 0.9 * epsilon0):
        assert pld_delta(one, epsilon=epsilon) == pytest.approx(laplace_delta(epsilon0, epsilon), abs=2 * GRID)
        assert laplace_delta(epsilon0, epsilon) <= pld_delta(one, epsilon=epsilon) + 1e-9
    for epsilon in (0.2 * epsilon0, epsilon0, 1.5 * epsilon0):
        exact = two_laplace_delta(epsilon0, epsilon)
        assert exact <= pld_delta(two, epsilon=epsilon) + 1e-9
        assert pld_delta(two, epsilon=epsilon) <= two_laplace_delta(epsilon0, epsilon - 2 * GRID) + 1e-9


def kov_delta(epsilon0: float, k: int, epsilon: float) -> float:
    "k-fold randomized response (the worst eps0-DP mechanism): sum_i C(k, i) [p^(k-i) q^i - e^eps p^i q^(k-i)]+"
    p, q = math.exp(epsilon0) / (1 + math.exp(epsilon0)), 1 / (1 + math.exp(epsilon0))
    return math.fsum(max(math.comb(k, i) * (p ** (k - i) * q**i - math.exp(epsilon) * p**i * q ** (k - i)), 0.0)
                     for i in range(k + 1))


@pytest.mark.parametrize("epsilon0, k", [(0.5, 20), (0.1, 365)])
def test_k_pure_releases_are_the_optimal_composition(epsilon0, k):
    releases = [ApproxRelease(epsilon0)] * k
    for epsilon in (0.5 * math.sqrt(k) * epsilon0, math.sqrt(k) * epsilon0):
        exact = kov_delta(epsilon0, k, epsilon)
        ours = pld_delta(releases, epsilon=epsilon)
        assert exact * (1 - 1e-12) <= ours <= kov_delta(epsilon0, k, epsilon - k * GRID) + 1e-12
    spent = pld_composition(releases, delta=1e-6)
    assert not spent.exact and spent.epsilon < basic_composition(releases).epsilon
    assert kov_delta(epsilon0, k, spent.epsilon) <= 1e-6 + 1e-13  # dp-accounting's FFT rounds near 1e-14


def test_approximate_releases_floor_delta_and_mixed_ones_compose():
    releases = [ApproxRelease(1.0, 1e-5)] * 3
    assert math.isinf(pld_composition(releases, delta=1e-6).epsilon)  # delta below 1 - (1 - 1e-5)^3
    assert math.isfinite(pld_composition(releases, delta=1e-4).epsilon)
    shuffled = shuffled_release(4.0, 100_000, 1e-8)
    assert shuffled.epsilon == amplified_epsilon(4.0, 100_000, 1e-8) and shuffled.delta == 1e-8
    mixed = [shuffled] * 30 + [DiscreteLaplaceRelease(Fraction(2), Shift(2, 1))] * 5
    both = compose(mixed, delta=1e-6)
    assert both.tight.epsilon < both.basic.epsilon and both.basic.delta == pytest.approx(30e-8)
    assert both.describe()["tight"]["bound"] == "upper bound"
    assert both.remaining(100.0) == pytest.approx(100.0 - both.tight.epsilon)


def test_discrete_releases_use_the_project_s_exact_accounting():
    release = DiscreteGaussianRelease(Fraction(30), 1e-6, Shift(2, 1))
    epsilon, delta = release.guarantee()
    assert discrete_gaussian_delta(30.0, epsilon, Shift(2, 1)) <= delta
    assert discrete_gaussian_delta(30.0, epsilon * (1 - 1e-7), Shift(2, 1)) > delta
    # one release's PLD figure agrees with the exact per-release one
    assert pld_composition([release], delta=1e-6).epsilon == pytest.approx(epsilon, abs=3 * GRID)
    assert DiscreteLaplaceRelease(Fraction(2), Shift(2, 1)).guarantee() == (1.0, 0.0)
    assert pld_composition([DiscreteLaplaceRelease(Fraction(2), Shift(2, 1))], delta=1e-9).epsilon <= 1.0 + 2 * GRID


@pytest.mark.parametrize("make, error", [(lambda: ApproxRelease(0.0), ValueError),
                                         (lambda: ApproxRelease(1.0, 1.0), ValueError),
                                         (lambda: GaussianRelease(1.0, 0.0), ValueError),
                                         (lambda: LaplaceRelease("1"), TypeError),
                                         (lambda: pld_composition([], delta=1e-6), ValueError)])
def test_bad_parameters_are_refused(make, error):
    with pytest.raises(error):
        make()
