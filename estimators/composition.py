"""What a device has spent over its releases: basic composition, and the tight one by privacy loss distributions.

A device's releases are the ones its data entered: each local report window an analyst publishes (its report is
epsilon0-LDP), each shuffled batch it was in (the batch's amplified (epsilon, delta), ``estimators.shuffle``), each
distributed batch's noisy sum (its noise and shift, ``estimators.distributed.accounting``).  The neighbouring
relation is the project's one, replace-one (n public), for every release, so the figures compose.

* :func:`basic_composition` sums the stated (epsilon_i, delta_i) (Dwork, McSherry, Nissim, Smith 2006; Dwork &
  Roth 2014, Theorem 3.16): always valid, loose over many releases.
* :func:`pld_composition` composes privacy loss distributions with Google's dp-accounting
  (``dp_accounting.pld``; Koskela, Jalko, Honkela 2020 and Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022 for
  the method) and reads epsilon at the total delta.  A mechanism release (Laplace, Gaussian, discrete Laplace,
  discrete Gaussian) enters with its own privacy loss distribution, several coordinates as that many independent
  coordinates composed; the figure is then the exact composition up to the discretisation of the losses, which
  dp-accounting rounds pessimistically (an upper bound, within about the interval per release of the exact one).
  A release known only by its (epsilon, delta) (a local report, a shuffled batch) enters as the dominating pair of
  every (epsilon, delta)-DP mechanism (``from_privacy_parameters``), so the composition is the optimal one for
  those guarantees (Kairouz, Oh, Viswanath, ICML 2015; Murtagh & Vadhan, TCC 2016, for unequal ones): an upper
  bound for the device's actual mechanisms, attained by the worst of them.  :class:`Spent` says which
  (``exact``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from .central import normal_cdf
from .distributed.accounting import Shift, discrete_gaussian_delta, discrete_laplace_epsilon


def _pld() -> Any:
    "dp-accounting's PLD module (imported on first use: it loads scipy, which a report without a ledger never needs)"
    # imported here: dp-accounting imports scipy (hundreds of modules); `ldp-telemetry report` must stay light
    from dp_accounting.pld import privacy_loss_distribution  # type: ignore[import-untyped]

    return privacy_loss_distribution


def _common() -> Any:
    "dp-accounting's common module (imported on first use, as :func:`_pld`)"
    # imported here: as _pld
    from dp_accounting.pld import common  # type: ignore[import-untyped]

    return common

DISCRETISATION = 1e-4  # dp-accounting's default interval of the privacy loss grid
BASIC = "basic composition: the sums of the releases' epsilons and deltas (Dwork & Roth 2014, Theorem 3.16)"
PLD_EXACT = ("privacy loss distributions (dp-accounting): the exact composition of the releases' mechanisms, "
             "rounded up on a loss grid of {interval:g}")
PLD_BOUND = ("privacy loss distributions (dp-accounting), releases known by their (epsilon, delta) as the worst "
             "mechanism with it: the optimal composition of those guarantees, an upper bound (Kairouz, Oh, "
             "Viswanath 2015)")


def _positive(name: str, value: float | Fraction) -> float:
    if not isinstance(value, (int, float, Fraction)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be positive and finite")
    return float(value)


def _delta(name: str, value: float, *, zero: bool = False) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number")
    if not ((zero and value == 0) or 0 < value < 1):
        raise ValueError(f"{name} must be {'at least 0 and ' if zero else ''}below 1{'' if zero else ' and above 0'}")
    return float(value)


class Release(Protocol):
    "One release a device's data entered: its stated guarantee and its privacy loss distribution"

    @property
    def exact(self) -> bool:
        "Whether the distribution is the mechanism's own (True) or the worst case of its (epsilon, delta)"

    def guarantee(self) -> tuple[float, float]:
        "The (epsilon, delta) the release states (what basic composition sums)"

    def privacy_loss(self, interval: float) -> Any:
        "Its dp-accounting PrivacyLossDistribution on a loss grid of ``interval``"


@dataclass(frozen=True)
class ApproxRelease:
    "A release known by its (epsilon, delta) alone (delta 0: pure epsilon-DP), e.g. an LDP report or a shuffled batch"

    epsilon: float
    delta: float = 0.0
    exact = False

    def __post_init__(self) -> None:
        _positive("epsilon", self.epsilon)
        _delta("delta", self.delta, zero=True)

    def guarantee(self) -> tuple[float, float]:
        return float(self.epsilon), float(self.delta)

    def privacy_loss(self, interval: float) -> Any:
        parameters = _common().DifferentialPrivacyParameters(float(self.epsilon), float(self.delta))
        return _pld().from_privacy_parameters(parameters, value_discretization_interval=interval)


def shuffled_release(epsilon0: float, n: int, delta: float) -> ApproxRelease:
    "A shuffled batch of n epsilon0-LDP reports: its amplified (epsilon, delta) (``estimators.shuffle``)"
    # imported here: estimators.shuffle loads scipy, which only a shuffled campaign's figures need
    from .shuffle import amplified_epsilon

    return ApproxRelease(amplified_epsilon(epsilon0, n, delta), delta)


@dataclass(frozen=True)
class LaplaceRelease:
    "Laplace noise of ``scale`` b on a query of L1 sensitivity ``sensitivity``: pure (sensitivity / b)-DP"

    scale: float
    sensitivity: float = 1.0
    exact = True

    def __post_init__(self) -> None:
        _positive("scale", self.scale)
        _positive("sensitivity", self.sensitivity)

    def guarantee(self) -> tuple[float, float]:
        return self.sensitivity / self.scale, 0.0

    def privacy_loss(self, interval: float) -> Any:
        return _pld().from_laplace_mechanism(
            float(self.scale), sensitivity=float(self.sensitivity), value_discretization_interval=interval)


@dataclass(frozen=True)
class GaussianRelease:
    "Gaussian noise of standard deviation ``sigma`` on a query of L2 sensitivity ``sensitivity``, stated at ``delta``"

    sigma: float
    delta: float
    sensitivity: float = 1.0
    exact = True

    def __post_init__(self) -> None:
        _positive("sigma", self.sigma)
        _positive("sensitivity", self.sensitivity)
        _delta("delta", self.delta)

    def guarantee(self) -> tuple[float, float]:
        return gaussian_epsilon(self.sigma, self.delta, self.sensitivity), float(self.delta)

    def privacy_loss(self, interval: float) -> Any:
        return _pld().from_gaussian_mechanism(
            float(self.sigma), sensitivity=float(self.sensitivity), value_discretization_interval=interval)


@dataclass(frozen=True)
class DiscreteLaplaceRelease:
    "Discrete Laplace noise P(y) ~ exp(-|y| / scale) on each coordinate a replaced report moves (a ``Shift``)"

    scale: Fraction | float
    shift: Shift = field(default_factory=Shift)
    exact = True

    def __post_init__(self) -> None:
        _positive("scale", self.scale)

    def guarantee(self) -> tuple[float, float]:
        return discrete_laplace_epsilon(Fraction(self.scale), self.shift), 0.0

    def privacy_loss(self, interval: float) -> Any:
        one = _pld().from_discrete_laplace_mechanism(
            1 / float(self.scale), sensitivity=self.shift.size, value_discretization_interval=interval)
        return one.self_compose(self.shift.coordinates) if self.shift.coordinates > 1 else one


@dataclass(frozen=True)
class DiscreteGaussianRelease:
    "Discrete Gaussian noise N_Z(0, sigma2) on each coordinate a replaced report moves (a ``Shift``), stated at delta"

    sigma2: Fraction | float
    delta: float
    shift: Shift = field(default_factory=Shift)
    exact = True

    def __post_init__(self) -> None:
        _positive("sigma2", self.sigma2)
        _delta("delta", self.delta)

    def guarantee(self) -> tuple[float, float]:
        "The smallest epsilon (to a relative 1e-9, rounded up) at which the exact delta is at most the stated one"
        sigma2 = float(self.sigma2)

        def delta_at(epsilon: float) -> float:
            return discrete_gaussian_delta(sigma2, epsilon, self.shift)

        return _smallest_epsilon(delta_at, self.delta), float(self.delta)

    def privacy_loss(self, interval: float) -> Any:
        one = _pld().from_discrete_gaussian_mechanism(
            math.sqrt(float(self.sigma2)), sensitivity=self.shift.size, value_discretization_interval=interval)
        return one.self_compose(self.shift.coordinates) if self.shift.coordinates > 1 else one


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """The exact delta of the Gaussian mechanism at ``epsilon`` (Balle & Wang, ICML 2018, Theorem 8):
    Phi(D/(2 sigma) - epsilon sigma/D) - e^epsilon Phi(-D/(2 sigma) - epsilon sigma/D), D the L2 sensitivity"""
    a = sensitivity / (2 * sigma)
    b = epsilon * sigma / sensitivity
    return max(normal_cdf(a - b) - math.exp(epsilon) * normal_cdf(-a - b), 0.0)


def gaussian_epsilon(sigma: float, delta: float, sensitivity: float = 1.0) -> float:
    "The smallest epsilon at which the Gaussian mechanism is (epsilon, delta)-DP (:func:`gaussian_delta` inverted)"
    return _smallest_epsilon(lambda epsilon: gaussian_delta(sigma, epsilon, sensitivity), delta)


def _smallest_epsilon(delta_at: Any, delta: float) -> float:
    "Bisection on a delta(epsilon) that falls with epsilon: the upper end, which passes, at a relative 1e-9"
    if delta_at(0.0) <= delta:
        return 0.0
    high = 1.0
    while delta_at(high) > delta:
        high *= 2
    low = 0.0
    while high - low > 1e-9 * high:
        middle = (low + high) / 2
        low, high = (middle, high) if delta_at(middle) > delta else (low, middle)
    return high


@dataclass(frozen=True)
class Spent:
    "What a device has spent over its releases: (epsilon, delta) by one method, and whether it is exact"

    epsilon: float
    delta: float
    method: str
    exact: bool
    releases: int

    def describe(self) -> dict:
        return {"epsilon": self.epsilon, "delta": self.delta, "method": self.method,
                "bound": "exact" if self.exact else "upper bound", "releases": self.releases,
                "relation": "replace-one"}


def basic_composition(releases: Iterable[Release]) -> Spent:
    "The sums of the releases' stated epsilons and deltas (valid for any mechanisms; an upper bound)"
    guarantees = [release.guarantee() for release in releases]
    epsilon = math.fsum(e for e, _ in guarantees)
    delta = math.fsum(d for _, d in guarantees)
    return Spent(epsilon, min(delta, 1.0), BASIC, False, len(guarantees))


def composed_privacy_loss(releases: Sequence[Release], interval: float = DISCRETISATION) -> Any:
    "The composed dp-accounting PrivacyLossDistribution of the releases (equal releases self-composed at once)"
    if not releases:
        raise ValueError("releases must hold at least one release")
    _positive("interval", interval)
    composed = None
    for release, times in Counter(releases).items():
        one = release.privacy_loss(interval)
        part = one.self_compose(times) if times > 1 else one
        composed = part if composed is None else composed.compose(part)
    return composed


def pld_composition(releases: Sequence[Release], *, delta: float, interval: float = DISCRETISATION) -> Spent:
    """The epsilon at ``delta`` of the releases composed by privacy loss distributions (module docstring): exact up
    to the pessimistic loss grid when every release is a mechanism's, else the optimal bound for the stated
    guarantees.  The epsilon is infinite when delta is below the mass of releases with an unbounded loss."""
    releases = list(releases)
    _delta("delta", delta)
    composed = composed_privacy_loss(releases, interval)
    epsilon = float(composed.get_epsilon_for_delta(delta))
    step = 1e-10 * max(epsilon, 1.0)
    while math.isfinite(epsilon) and composed.get_delta_for_epsilon(epsilon) > delta:  # its search stops close
        epsilon += step  # above or below the crossing: the figure stated passes on the distribution
        step *= 2
    exact = all(release.exact for release in releases)
    method = PLD_EXACT.format(interval=interval) if exact else PLD_BOUND
    return Spent(epsilon, float(delta), method, exact, len(releases))


def pld_delta(releases: Sequence[Release], *, epsilon: float, interval: float = DISCRETISATION) -> float:
    "The delta at ``epsilon`` of the releases composed by privacy loss distributions (an upper bound, see above)"
    if not (isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError("epsilon must be a finite number of at least 0")
    return float(composed_privacy_loss(list(releases), interval).get_delta_for_epsilon(float(epsilon)))


@dataclass(frozen=True)
class Composition:
    "A device's spend by both methods, side by side, and what remains of a budget"

    basic: Spent
    tight: Spent

    def remaining(self, budget_epsilon: float) -> float:
        "What remains of an epsilon budget by the tight figure (never below 0)"
        return max(budget_epsilon - self.tight.epsilon, 0.0)

    def describe(self) -> dict:
        return {"basic": self.basic.describe(), "tight": self.tight.describe()}


def compose(releases: Sequence[Release], *, delta: float, interval: float = DISCRETISATION) -> Composition:
    """Basic composition and the privacy-loss-distribution figure at ``delta`` for the same releases.  ``delta`` is
    the device's total delta; for a fair comparison it should be at least the basic figure's delta."""
    releases = list(releases)
    return Composition(basic_composition(releases), pld_composition(releases, delta=delta, interval=interval))
