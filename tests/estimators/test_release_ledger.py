"""The release ledger's figures against independent computations: basic composition by hand, the tight figure
against the exact privacy profiles (k-fold randomized response for pure epsilon-DP releases, the discrete Gaussian's
exact delta for its k-fold composition, ``estimators.distributed.accounting``)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from client_sdk.budget import Budget
from estimators.distributed.accounting import Shift, discrete_gaussian_delta
from estimators.release_ledger import LedgerRow, ledger_figures

GRID = 1e-4  # dp-accounting's loss grid: its figure is above the exact one by at most about this per release


def smallest_epsilon(delta_at, delta: float) -> float:
    low, high = 0.0, 1.0
    while delta_at(high) > delta:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if delta_at(middle) > delta else (low, middle)
    return high


def randomized_response_delta(k: int, epsilon: float, total: float) -> float:
    "Exact delta at ``total`` of k pure epsilon-DP releases composed (the dominating pair: randomized response)"
    p = math.exp(epsilon) / (1 + math.exp(epsilon))
    q = 1 - p
    return sum(max(math.comb(k, j) * (p**j * q**(k - j) - math.exp(total) * q**j * p**(k - j)), 0.0)
               for j in range(k + 1))


def local(epsilon: float, charges: int) -> LedgerRow:
    return LedgerRow("window", epsilon, 0.0, charges, {"type": "approx", "epsilon": epsilon, "delta": 0.0})


def test_basic_is_the_sum_of_the_charges_and_the_budget_remains_by_it():
    rows = [local(0.5, 3), local(0.5, 2),
            LedgerRow("batch", 1.0, 1e-6, 1, {"type": "discrete_laplace", "scale": "2", "shift": {"coordinates": 2,
                                                                                                "size": 1}})]
    figures = ledger_figures(rows, Budget(10.0, 1e-5))
    basic = figures["spent"]["basic"]
    assert basic["epsilon"] == pytest.approx(0.5 * 5 + 1.0) and basic["delta"] == pytest.approx(1e-6)
    assert figures["charges"] == 6 and figures["releases"] == 3
    assert figures["remaining"] == pytest.approx({"epsilon": 10.0 - 3.5, "delta": 1e-5 - 1e-6})
    assert figures["spent"]["tight"]["epsilon"] < basic["epsilon"]


@pytest.mark.parametrize(("k", "epsilon", "delta"), [(10, 0.5, 1e-6), (30, 1.0, 1e-5), (365, 0.1, 1e-8)])
def test_tight_figure_of_pure_releases_is_the_exact_composition(k, epsilon, delta):
    tight = ledger_figures([local(epsilon, k)], Budget(k * epsilon, delta))["spent"]["tight"]
    exact = smallest_epsilon(lambda t: randomized_response_delta(k, epsilon, t), delta)
    assert tight["delta"] == delta and tight["bound"] == "upper bound"  # an upper bound for the actual randomizer
    assert exact * (1 - 1e-7) <= tight["epsilon"] <= exact + k * GRID + 1e-6  # 1e-7: floating sums
    assert tight["epsilon"] < k * epsilon


@pytest.mark.parametrize(("k", "sigma2"), [(1, 4.0), (5, 9.0), (50, 25.0)])
def test_tight_figure_of_discrete_gaussian_batches_is_the_exact_composition(k, sigma2):
    mechanism = {"type": "discrete_gaussian", "sigma2": str(Fraction(sigma2)), "delta": 1e-6,
                 "shift": {"coordinates": 1, "size": 1}}
    rows = [LedgerRow(f"batch-{i}", 1.0, 1e-6, 1, mechanism) for i in range(k)]
    tight = ledger_figures(rows, None)["spent"]["tight"]
    total_delta = k * 1e-6  # read at the charges' total delta
    exact = smallest_epsilon(lambda t: discrete_gaussian_delta(sigma2, t, Shift(k, 1)), total_delta)
    assert tight["bound"] == "exact" and tight["delta"] == pytest.approx(total_delta)
    assert exact * (1 - 1e-7) <= tight["epsilon"] <= exact + k * GRID + 1e-6  # 1e-7: floating sums


def test_pure_releases_without_a_delta_compose_to_their_sum_and_nothing_spent_is_zero():
    figures = ledger_figures([local(0.25, 4)], Budget(2.0))
    assert figures["spent"]["tight"]["epsilon"] == figures["spent"]["basic"]["epsilon"] == pytest.approx(1.0)
    empty = ledger_figures([], Budget(2.0))
    assert empty["spent"]["basic"]["epsilon"] == 0 and empty["remaining"] == {"epsilon": 2.0}
