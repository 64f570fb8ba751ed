"""Plan a campaign before collecting: the expected standard error of a mechanism, and the n a target needs.

The variance has the estimates' two targets (``estimators.central.TARGETS``).  Target "reported" (privacy noise
only): frequencies use the fixed-data variance of Wang et al. (2017) for a value of true frequency f,
``Var = [q*(1-q*)/(p*-q*)^2 + f (1-p*-q*)/(p*-q*)] / n`` (f = 0 by default: the rare values), means the
mechanism's worst-case per-report variance over the range (N. Wang et al., ICDE 2019).  Target "population" (the
default, as ``std_error`` of an estimate) adds the sampling variance: f (1 - f) / n for a frequency (nothing at
f = 0), and for a mean the worst case over populations of Var(Z) = E[noise(t)] + Var(t), max(v(0), v(1) + 1) for
a per-report variance v(t) = a + b t^2 on [-1, 1].  Scaled from [-1, 1] to [low, high] for means.

The central column is :func:`estimators.central.central_noise` under replace-one (n public): a histogram's
fraction (L1 2/n, L2 sqrt(2)/n) or a mean ((high - low)/n), the Gaussian mechanism with a ``delta``, Laplace
without; ``ldp_to_central_ratio`` is the privacy-noise price (target "reported" on both sides), through
:func:`estimators.central.ldp_to_central_ratio`, the estimates' own definition: for a histogram the root mean
square over the d values of the noise standard error (:func:`estimators.central.histogram_noise_std_error`, the
same for every distribution, so the planner's figure is the estimate's for the same cell), for a mean the worst
case over the range.  ``std_error`` and ``ci_halfwidth`` are a value's at frequency 0 (a rare value).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist

from client_sdk.mechanisms import CategoricalMechanism, NumericMechanism, mechanism_from_spec
from client_sdk.spec import CATEGORICAL_MECHANISMS, NUMERIC_MECHANISMS, Spec, load_spec

from .central import (
    RELATION,
    TARGET_POPULATION,
    TARGET_REPORTED,
    TARGETS,
    central_block,
    central_noise,
    histogram_noise_std_error,
    histogram_sensitivity,
    ldp_to_central_ratio,
    mean_sensitivity,
)


@dataclass(frozen=True)
class Plan:
    "Expected error of one mechanism for one campaign size"

    mechanism: str
    epsilon: float
    n: int
    std_error: float
    ci_halfwidth: float
    central_std_error: float
    ldp_to_central_ratio: float
    n_for_target: int | None
    target: str = TARGET_POPULATION
    relation: str = RELATION
    central_mechanism: str = "Laplace"
    noise_std_error: float | None = None  # target "reported", the ratio's numerator (histogram: RMS over values)

    def to_dict(self) -> dict:
        return asdict(self)


def _spec(mechanism: str, epsilon: float, domain_size: int | None, value_range: tuple[float, float] | None) -> Spec:
    if mechanism in NUMERIC_MECHANISMS or (mechanism == "auto" and value_range is not None and domain_size is None):
        if value_range is None:
            value_range = (-1.0, 1.0)
        return load_spec({"name": "plan", "mechanism": mechanism, "epsilon": epsilon, "range": list(value_range)})
    if mechanism in CATEGORICAL_MECHANISMS or mechanism == "auto":
        if domain_size is None or domain_size < 2:
            raise ValueError("domain_size (at least 2) is needed for a categorical mechanism")
        return load_spec({"name": "plan", "mechanism": mechanism, "epsilon": epsilon,
                          "domain": list(range(domain_size))})
    raise ValueError(f"the planner covers {list(CATEGORICAL_MECHANISMS + NUMERIC_MECHANISMS)} and 'auto'")


def _check_target(target: str) -> None:
    if target not in TARGETS:
        raise ValueError(f"target must be one of {list(TARGETS)}")


def per_report_variance(mechanism: str, epsilon: float, *, domain_size: int | None = None,
                        value_range: tuple[float, float] | None = None, frequency: float = 0.0,
                        target: str = TARGET_POPULATION) -> float:
    "Variance of one report's contribution: n times the variance of the estimate, for ``target``"
    _check_target(target)
    spec = _spec(mechanism, epsilon, domain_size, value_range)
    randomizer = mechanism_from_spec(spec)
    if isinstance(randomizer, CategoricalMechanism):
        p, q = randomizer.p_star, randomizer.q_star
        noise = q * (1 - q) / (p - q) ** 2 + frequency * (1 - p - q) / (p - q)
        return noise + (frequency * (1 - frequency) if target == TARGET_POPULATION else 0.0)
    assert isinstance(randomizer, NumericMechanism) and spec.range is not None
    half = (spec.range[1] - spec.range[0]) / 2
    worst = randomizer.worst_case_variance()
    if target == TARGET_POPULATION:  # users at +-1 add Var(t) = 1 where the noise does not fall by as much
        worst = max(worst, randomizer.variance(1.0) + 1.0)
    return worst * half * half


def expected_std_error(mechanism: str, epsilon: float, n: int, *, domain_size: int | None = None,
                       value_range: tuple[float, float] | None = None, frequency: float = 0.0,
                       target: str = TARGET_POPULATION) -> float:
    "The standard error of a frequency (or a mean) estimated from n reports, for ``target``"
    if n < 1:
        raise ValueError("n must be at least 1")
    return math.sqrt(per_report_variance(mechanism, epsilon, domain_size=domain_size, value_range=value_range,
                                         frequency=frequency, target=target) / n)


def n_for_halfwidth(mechanism: str, epsilon: float, halfwidth: float, *, confidence: float = 0.95,
                    domain_size: int | None = None, value_range: tuple[float, float] | None = None,
                    frequency: float = 0.0, target: str = TARGET_POPULATION) -> int:
    "The smallest n whose CI half-width (z SE) is at most ``halfwidth``"
    if halfwidth <= 0:
        raise ValueError("halfwidth must be positive")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    variance = per_report_variance(mechanism, epsilon, domain_size=domain_size, value_range=value_range,
                                   frequency=frequency, target=target)
    return max(1, math.ceil(variance * (z / halfwidth) ** 2))


def plan(mechanism: str, epsilon: float, n: int, *, domain_size: int | None = None,
         value_range: tuple[float, float] | None = None, confidence: float = 0.95,
         target_halfwidth: float | None = None, target: str = TARGET_POPULATION, delta: float | None = None) -> Plan:
    "Expected error of ``mechanism`` (for ``target``) against central DP at the same epsilon, replace-one"
    _check_target(target)
    resolved = _spec(mechanism, epsilon, domain_size, value_range).mechanism
    std_error = expected_std_error(resolved, epsilon, n, target=target, domain_size=domain_size,
                                   value_range=value_range)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    if resolved in NUMERIC_MECHANISMS:
        low, high = value_range or (-1.0, 1.0)
        sensitivity = mean_sensitivity(low, high, n)
        noise_only = expected_std_error(resolved, epsilon, n, target=TARGET_REPORTED, value_range=value_range)
    else:
        sensitivity = histogram_sensitivity(n)
        noise_only = noise_std_error(resolved, epsilon, n, domain_size=domain_size or 2)
    central = central_noise(sensitivity, epsilon, delta, confidence)
    needed = None
    if target_halfwidth is not None:
        needed = n_for_halfwidth(resolved, epsilon, target_halfwidth, confidence=confidence, target=target,
                                 domain_size=domain_size, value_range=value_range)
    ratio = ldp_to_central_ratio(noise_only, central["std_error"])
    assert ratio is not None  # central DP's noise is positive at every epsilon the spec allows
    return Plan(resolved, epsilon, n, std_error, z * std_error, central["std_error"], ratio, needed, target, RELATION,
                central["mechanism"], noise_only)


def noise_std_error(mechanism: str, epsilon: float, n: int, *, domain_size: int) -> float:
    "A histogram's privacy-noise standard error, root mean square over the values (the estimates' ratio numerator)"
    randomizer = mechanism_from_spec(_spec(mechanism, epsilon, domain_size, None))
    assert isinstance(randomizer, CategoricalMechanism)
    return histogram_noise_std_error(randomizer.p_star, randomizer.q_star, domain_size, n)


def compare_mechanisms(epsilon: float, n: int, *, domain_size: int | None = None,
                       value_range: tuple[float, float] | None = None, confidence: float = 0.95,
                       target_halfwidth: float | None = None, target: str = TARGET_POPULATION,
                       delta: float | None = None) -> list[Plan]:
    """Every applicable mechanism, lowest privacy noise first (target "reported": the population's own variance
    is the same under every mechanism; a rare value's, at f = 0, for a histogram: the rule ``auto`` follows)"""
    names = NUMERIC_MECHANISMS if value_range is not None else CATEGORICAL_MECHANISMS
    plans = [plan(name, epsilon, n, domain_size=domain_size, value_range=value_range, confidence=confidence,
                  target_halfwidth=target_halfwidth, target=target, delta=delta) for name in names]
    return sorted(plans, key=lambda p: expected_std_error(p.mechanism, epsilon, n, target=TARGET_REPORTED,
                                                          domain_size=domain_size, value_range=value_range))


def expected_central_block(mechanism: str, epsilon: float, n: int, frequencies: list[float], *,
                           confidence: float = 0.95, delta: float | None = None) -> dict:
    """The ``central_dp`` block an estimate of a histogram would carry in expectation, at the true ``frequencies``
    (they sum to 1): the headline ratio is the same for every distribution, ``total`` depends on it (the sampling
    variance f (1 - f) / n of each value, on both sides)"""
    if abs(sum(frequencies) - 1) > 1e-9 or min(frequencies) < 0:
        raise ValueError("frequencies must be a distribution: non-negative, summing to 1")
    d = len(frequencies)
    randomizer = mechanism_from_spec(_spec(mechanism, epsilon, d, None))
    assert isinstance(randomizer, CategoricalMechanism)
    p, q = randomizer.p_star, randomizer.q_star
    support = [q + f * (p - q) for f in frequencies]
    total = math.sqrt(sum(pi * (1 - pi) for pi in support) / (d * n)) / abs(p - q)
    sampling = math.sqrt(sum(f * (1 - f) for f in frequencies) / (d * n))
    return central_block(sensitivity=histogram_sensitivity(n), epsilon=epsilon, confidence=confidence, delta=delta,
                         ldp_noise_std_error=histogram_noise_std_error(p, q, d, n), ldp_total_std_error=total,
                         sampling_std_error=sampling)
