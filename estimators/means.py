"""Means of bounded numbers with standard errors and confidence intervals (Laplace, Duchi, Piecewise, Hybrid).

Each report's payload maps to an unbiased value Z of t = 2 (v - low)/(high - low) - 1 (see
``client_sdk.mechanisms.numeric``).  From the aggregate's sums of Z and Z^2:

* mean of t     m = sum Z / n,     mapped back: low + (m + 1)(high - low)/2
* standard err  SE = sd(Z) / sqrt(n) (sample standard deviation of the unbiased values), times (high - low)/2.
                Duchi's Z is +-C, so for iid users Var(Z) = C^2 - E[t]^2 exactly (Duchi, Jordan, Wainwright 2013):
                its variance is the larger of the sample variance and C^2 - m^2 at the estimate m clipped to
                [-1, 1], so n equal codes (m = +-C) do not give SE = 0
* interval      mean +- z SE
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from client_sdk.mechanisms import mechanism_from_spec
from client_sdk.mechanisms.numeric import GRID, PM_CELLS, Duchi, Hybrid, Piecewise
from client_sdk.spec import Spec

from .aggregation import Aggregate
from .central import NEIGHBOURING_MEAN, central_block
from .errors import NoReports


@dataclass
class MeanEstimate:
    "The estimated mean of one numeric campaign, with uncertainty"

    spec: Spec
    n: int
    confidence: float
    mean: float
    std_error: float
    ci_low: float
    ci_high: float
    central_dp: dict

    def to_dict(self) -> dict[str, Any]:
        low, high = self.spec.range or (0.0, 0.0)
        return {
            "kind": "mean", "campaign": self.spec.name, "mechanism": self.spec.mechanism,
            "epsilon": self.spec.epsilon, "fingerprint": self.spec.fingerprint, "n": int(self.n),
            "confidence": self.confidence, "range": [low, high], "mean": self.mean,
            "mean_clamped": min(max(self.mean, low), high), "std_error": self.std_error,
            "ci_low": self.ci_low, "ci_high": self.ci_high, "central_dp": self.central_dp,
        }


def unbiased_sums(spec: Spec, aggregate: Aggregate) -> tuple[float, float]:
    "(sum Z, sum Z^2) over the reports, on the [-1, 1] scale"
    mechanism = mechanism_from_spec(spec)
    s = [int(x) for x in aggregate.counts]
    n = aggregate.n
    if spec.mechanism == "laplace":
        return s[0] / GRID, s[1] / GRID**2
    if spec.mechanism == "duchi":
        assert isinstance(mechanism, Duchi)
        return _duchi_sums(mechanism, n, s[0])
    if spec.mechanism == "piecewise":
        assert isinstance(mechanism, Piecewise)
        return _piecewise_sums(mechanism, n, s[0], s[1])
    assert isinstance(mechanism, Hybrid)
    d_sum, d_sq = _duchi_sums(mechanism.duchi, s[0], s[1])
    p_sum, p_sq = _piecewise_sums(mechanism.piecewise, s[2], s[3], s[4])
    return d_sum + p_sum, d_sq + p_sq


def _duchi_sums(mechanism: Duchi, n: int, ones: int) -> tuple[float, float]:
    c = mechanism.magnitude
    return c * (2 * ones - n), n * c * c


def _piecewise_sums(mechanism: Piecewise, n: int, total: int, squares: int) -> tuple[float, float]:
    c = mechanism.magnitude
    w = 2 * c / PM_CELLS
    return -n * c + w * total, n * c * c - 2 * c * w * total + w * w * squares


def estimate_mean(spec: Spec, aggregate: Aggregate, *, confidence: float = 0.95,
                  delta: float | None = None) -> MeanEstimate:
    "The unbiased mean with its standard error, interval and the central-DP baseline"
    n = aggregate.n
    if n <= 0:
        raise NoReports(f"campaign {spec.name!r} has no reports in this window")
    low, high = spec.range  # type: ignore[misc]
    half_width = (high - low) / 2
    total, squares = unbiased_sums(spec, aggregate)
    mean_t = total / n
    mechanism = mechanism_from_spec(spec)
    if n > 1:
        variance = max(squares - n * mean_t**2, 0.0) / (n - 1)
    else:  # one report has no sample variance: use the mechanism's worst case
        variance = mechanism.worst_case_variance()  # type: ignore[attr-defined]
    if isinstance(mechanism, Duchi):
        variance = max(variance, mechanism.variance(min(max(mean_t, -1.0), 1.0)))
    std_error = math.sqrt(variance / n) * half_width
    mean = low + (mean_t + 1) * half_width
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    central = central_block(
        sensitivity=(high - low) / n, epsilon=spec.epsilon, confidence=confidence,
        delta=delta if delta is not None else spec.delta, ldp_std_error=std_error, neighbouring=NEIGHBOURING_MEAN,
    )
    return MeanEstimate(spec=spec, n=n, confidence=confidence, mean=mean, std_error=std_error,
                        ci_low=mean - z * std_error, ci_high=mean + z * std_error, central_dp=central)
