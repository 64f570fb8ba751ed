"""Plan a campaign before collecting: the expected standard error of a mechanism, and the n a target needs.

Frequencies use the fixed-data variance of Wang et al. (2017) for a value of true frequency f:
``Var = [q*(1-q*)/(p*-q*)^2 + f (1-p*-q*)/(p*-q*)] / n`` (f = 0 by default: the rare values).
Means use the mechanism's worst-case per-report variance over the range (N. Wang et al., ICDE 2019; see
docs/mechanisms.md), scaled from [-1, 1] to [low, high].  The central-DP column is the Laplace mechanism at the
same epsilon (``central``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist

from client_sdk.mechanisms import CategoricalMechanism, NumericMechanism, mechanism_from_spec
from client_sdk.spec import CATEGORICAL_MECHANISMS, NUMERIC_MECHANISMS, Spec, load_spec

from .central import laplace_baseline


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

    def to_dict(self) -> dict:
        return asdict(self)


def _spec(mechanism: str, epsilon: float, domain_size: int | None, value_range: tuple[float, float] | None) -> Spec:
    if mechanism in NUMERIC_MECHANISMS:
        if value_range is None:
            value_range = (-1.0, 1.0)
        return load_spec({"name": "plan", "mechanism": mechanism, "epsilon": epsilon, "range": list(value_range)})
    if mechanism in CATEGORICAL_MECHANISMS or mechanism == "auto":
        if domain_size is None or domain_size < 2:
            raise ValueError("domain_size (at least 2) is needed for a categorical mechanism")
        return load_spec({"name": "plan", "mechanism": mechanism, "epsilon": epsilon,
                          "domain": list(range(domain_size))})
    raise ValueError(f"the planner covers {list(CATEGORICAL_MECHANISMS + NUMERIC_MECHANISMS)} and 'auto'")


def per_report_variance(mechanism: str, epsilon: float, *, domain_size: int | None = None,
                        value_range: tuple[float, float] | None = None, frequency: float = 0.0) -> float:
    "Variance of one report's contribution: n times the variance of the estimate"
    spec = _spec(mechanism, epsilon, domain_size, value_range)
    randomizer = mechanism_from_spec(spec)
    if isinstance(randomizer, CategoricalMechanism):
        p, q = randomizer.p_star, randomizer.q_star
        return q * (1 - q) / (p - q) ** 2 + frequency * (1 - p - q) / (p - q)
    assert isinstance(randomizer, NumericMechanism) and spec.range is not None
    half = (spec.range[1] - spec.range[0]) / 2
    return randomizer.worst_case_variance() * half * half


def expected_std_error(mechanism: str, epsilon: float, n: int, *, domain_size: int | None = None,
                       value_range: tuple[float, float] | None = None, frequency: float = 0.0) -> float:
    "The standard error of a frequency (or a mean) estimated from n reports"
    if n < 1:
        raise ValueError("n must be at least 1")
    return math.sqrt(per_report_variance(mechanism, epsilon, domain_size=domain_size, value_range=value_range,
                                         frequency=frequency) / n)


def n_for_halfwidth(mechanism: str, epsilon: float, halfwidth: float, *, confidence: float = 0.95,
                    domain_size: int | None = None, value_range: tuple[float, float] | None = None,
                    frequency: float = 0.0) -> int:
    "The smallest n whose CI half-width (z SE) is at most ``halfwidth``"
    if halfwidth <= 0:
        raise ValueError("halfwidth must be positive")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    variance = per_report_variance(mechanism, epsilon, domain_size=domain_size, value_range=value_range,
                                   frequency=frequency)
    return max(1, math.ceil(variance * (z / halfwidth) ** 2))


def plan(mechanism: str, epsilon: float, n: int, *, domain_size: int | None = None,
         value_range: tuple[float, float] | None = None, confidence: float = 0.95,
         target_halfwidth: float | None = None) -> Plan:
    "Expected error of ``mechanism`` against the central Laplace baseline at the same epsilon"
    resolved = _spec(mechanism, epsilon, domain_size, value_range).mechanism
    std_error = expected_std_error(resolved, epsilon, n, domain_size=domain_size, value_range=value_range)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    if resolved in NUMERIC_MECHANISMS:
        low, high = value_range or (-1.0, 1.0)
        sensitivity = (high - low) / n
    else:
        sensitivity = 1.0 / n
    central = laplace_baseline(sensitivity, epsilon, confidence)["std_error"]
    needed = None
    if target_halfwidth is not None:
        needed = n_for_halfwidth(resolved, epsilon, target_halfwidth, confidence=confidence,
                                 domain_size=domain_size, value_range=value_range)
    return Plan(resolved, epsilon, n, std_error, z * std_error, central, std_error / central, needed)


def compare_mechanisms(epsilon: float, n: int, *, domain_size: int | None = None,
                       value_range: tuple[float, float] | None = None, confidence: float = 0.95,
                       target_halfwidth: float | None = None) -> list[Plan]:
    "Every applicable mechanism, lowest standard error first"
    names = NUMERIC_MECHANISMS if value_range is not None else CATEGORICAL_MECHANISMS
    plans = [plan(name, epsilon, n, domain_size=domain_size, value_range=value_range, confidence=confidence,
                  target_halfwidth=target_halfwidth) for name in names]
    return sorted(plans, key=lambda p: p.std_error)
