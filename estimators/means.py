"""Means of bounded numbers with standard errors and confidence intervals (Laplace, Duchi, Piecewise, Hybrid).

Each report's payload maps to an unbiased value Z of t = 2 (v - low)/(high - low) - 1 (see
``estimators.mechanisms.numeric``).  From the aggregate's sums of Z and Z^2:

* mean of t     m = sum Z / n,     mapped back: low + (m + 1)(high - low)/2
* standard err  SE = sd(Z) / sqrt(n) (sample standard deviation of the unbiased values), times (high - low)/2.
                The variance is never below the mechanism's own v(m) at the estimate m clipped to [-1, 1]
                (for v(t) = a + b t^2, Var(Z) = a + (1 + b) E[t^2] - m^2 >= v(m)).  Duchi's Z is +-C, so for iid
                users Var(Z) = C^2 - m^2 exactly (Duchi, Jordan, Wainwright 2013), and n equal codes do not give
                SE = 0; the same holds for Hybrid at eps <= 0.61, which is Duchi
                That is target "population" (users as a sample from a population, the default, ``std_error``).
* target "reported" (the users who reported: privacy noise only, ``std_error_reported``): every mechanism's
                per-report variance is a + b t^2 (Laplace, Duchi, Piecewise, Hybrid), so E[Z^2] = a + (1 + b)
                mean(t^2) gives mean(t^2), clipped to [m^2, 1], and the noise variance a + b mean(t^2).  Where
                1 + b = 0 (Duchi, Hybrid at eps <= 0.61: Z^2 = C^2 carries nothing about t) mean(t^2) is
                unidentifiable; m^2 is used, an upper bound on the noise variance (then it equals the population SE)
* interval      mean +- z SE
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

from client_sdk.spec import Spec

from .central import TARGET_POPULATION, TARGETS, central_block, mean_sensitivity
from .errors import NoReports
from .registry import mechanism_for

if TYPE_CHECKING:  # the aggregate's module goes through the mechanism registry, which builds on this one
    from .aggregation import Aggregate


@dataclass
class MeanEstimate:
    "The estimated mean of one numeric campaign, with uncertainty"

    spec: Spec
    n: int
    confidence: float
    mean: float
    std_error: float
    reported_std_error: float
    ci_low: float
    ci_high: float
    central_dp: dict

    def to_dict(self) -> dict[str, Any]:
        low, high = self.spec.range or (0.0, 0.0)
        unit = {"unit": self.spec.unit} if self.spec.unit is not None else {}  # the spec's, for axes and headers
        return {**unit,
            "kind": "mean", "campaign": self.spec.name, "mechanism": self.spec.mechanism,
            "epsilon": self.spec.epsilon, "fingerprint": self.spec.fingerprint, "n": int(self.n),
            "confidence": self.confidence, "target": TARGET_POPULATION, "targets": TARGETS, "range": [low, high],
            "mean": self.mean, "mean_clamped": min(max(self.mean, low), high), "std_error": self.std_error,
            "std_error_reported": self.reported_std_error,
            "ci_low": self.ci_low, "ci_high": self.ci_high, "central_dp": self.central_dp,
        }

    def to_json(self) -> dict[str, Any]:
        "The shape every kind shares (estimators/report/report.schema.json): :meth:`to_dict` and one ``values`` row"
        return {**self.to_dict(), "values": [{"value": "mean", "estimate": self.mean, "std_error": self.std_error,
                                              "ci_low": self.ci_low, "ci_high": self.ci_high}]}


def unbiased_sums(spec: Spec, aggregate: Aggregate) -> tuple[float, float]:
    "(sum Z, sum Z^2) over the reports, on the [-1, 1] scale (the mechanism's server entry maps the codes)"
    entry: Any = mechanism_for(spec)  # an estimators.mechanisms.numeric.MeanMechanism
    return entry.unbiased_sums(aggregate.n, [int(x) for x in aggregate.counts])


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
    entry: Any = mechanism_for(spec)  # an estimators.mechanisms.numeric.MeanMechanism
    if n > 1:
        variance = max(squares - n * mean_t**2, 0.0) / (n - 1)
    else:  # one report has no sample variance: use the mechanism's worst case
        variance = entry.variance()
    # never below the mechanism's own variance at the (clipped) estimate: Var(Z) = a + (1 + b) E[t^2] - m^2 >=
    # a + b m^2 for v(t) = a + b t^2.  For Duchi (and Hybrid at eps <= 0.61, which is Duchi) it is exact, so n
    # equal codes do not give SE = 0
    variance = max(variance, entry.device.variance(min(max(mean_t, -1.0), 1.0)))
    std_error = math.sqrt(variance / n) * half_width
    noise = min(noise_variance(entry.device, squares / n, mean_t), variance)
    reported = math.sqrt(noise / n) * half_width
    sampling = math.sqrt((variance - noise) / n) * half_width
    mean = low + (mean_t + 1) * half_width
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    central = central_block(
        sensitivity=mean_sensitivity(low, high, n), epsilon=spec.epsilon, confidence=confidence,
        delta=delta if delta is not None else spec.delta, ldp_noise_std_error=reported,
        ldp_total_std_error=std_error, sampling_std_error=sampling,
    )
    return MeanEstimate(spec=spec, n=n, confidence=confidence, mean=mean, std_error=std_error,
                        reported_std_error=reported,
                        ci_low=mean - z * std_error, ci_high=mean + z * std_error, central_dp=central)


def noise_variance(device: Any, mean_square: float, mean_t: float) -> float:
    """The per-report privacy-noise variance averaged over the reporting users (target "reported"), from the mean of
    Z^2 and the mean of t on the [-1, 1] scale; the mechanism's variance is a + b t^2"""
    a = device.variance(0.0)
    b = device.variance(1.0) - a
    m2 = min(max(mean_t, -1.0), 1.0) ** 2
    if 1 + b > 1e-9:
        mean_t2 = min(max((mean_square - a) / (1 + b), m2), 1.0)
    else:  # Z^2 is constant: mean(t^2) unidentifiable; m^2 bounds the noise variance from above
        mean_t2 = m2
    return a + b * mean_t2
