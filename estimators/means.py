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
* interval      for target "population", on the t scale, then mapped back (it always contains the mean):
                Duchi (and Hybrid at eps <= 0.61): every Z is +-C, so the count of ones is Binomial(n, pi) with
                pi = (1 + c E[t]) / 2 exactly, for users drawn from a population.  Its interval is the one every
                frequency oracle uses (``estimators.intervals``: Wilson 1927 with the Poisson bounds of Brown,
                Cai & DasGupta 2001 for 1..3 ones or zeros), in its hull with Agresti & Coull's 1998 interval
                (Wilson's alone dips to 0.921 exact coverage at n = 30), with p* = (1 + c)/2, q* = (1 - c)/2 and
                t = 2 f - 1.
                The others (Laplace, Piecewise, Hybrid above 0.61): the score interval {mu: (m - mu)^2 <= z^2 V(mu)
                / n} with V(mu) = max(s^2 + max(m'^2 - mu^2, 0), a + b mu^2), s^2 the sample variance, m' = m
                clipped to [-1, 1].  The first term is Wilson's generalised: with E[Z^2] = Var Z + E[t]^2 held at its
                estimate s^2 + m'^2, Var(Z) at mean mu is E[Z^2] - mu^2 (for codes at +-1 it is exactly Wilson's
                interval; m' as E[t] is in [-1, 1]), so a sample at a bound with no spread (2% at the top, n = 30:
                no such user in 55% of samples) still reaches towards the middle, where the plug-in SE collapsed
                (0.47 coverage); it is never below s^2, the normal interval, which holds where a few far values
                make the sample skewed.  The second is the mechanism's own variance at mu, the least
                Var(Z) can be (all users at mu); where it grows faster than (m - mu)^2 (z^2 b >= n: Piecewise at
                small eps and n, a half-width above the range) its largest value, a + b, gives a normal interval.
                Coverage over mechanisms, epsilons, n >= 30 and populations at and near the bounds:
                ``tests/estimators/test_coverage_grid.py`` and ``benchmarks/mean_coverage.py`` (docs/mechanisms.md);
                near a bound it exceeds 0.975 (the side towards the middle almost never misses), as said there
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from client_sdk.spec import Spec

from .central import TARGET_POPULATION, TARGETS, central_block, mean_sensitivity
from .errors import NoReports
from .intervals import frequency_interval, z_value
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
        sample_variance = max(squares - n * mean_t**2, 0.0) / (n - 1)
    else:  # one report has no sample variance: use the mechanism's worst case
        sample_variance = entry.variance()
    # never below the mechanism's own variance at the (clipped) estimate: Var(Z) = a + (1 + b) E[t^2] - m^2 >=
    # a + b m^2 for v(t) = a + b t^2.  For Duchi (and Hybrid at eps <= 0.61, which is Duchi) it is exact, so n
    # equal codes do not give SE = 0
    variance = max(sample_variance, entry.device.variance(min(max(mean_t, -1.0), 1.0)))
    std_error = math.sqrt(variance / n) * half_width
    noise = min(noise_variance(entry.device, squares / n, mean_t), variance)
    reported = math.sqrt(noise / n) * half_width
    sampling = math.sqrt((variance - noise) / n) * half_width
    mean = low + (mean_t + 1) * half_width
    low_t, high_t = unit_interval(entry, aggregate, mean_t, sample_variance, confidence)
    central = central_block(
        sensitivity=mean_sensitivity(low, high, n), epsilon=spec.epsilon, confidence=confidence,
        delta=delta if delta is not None else spec.delta, ldp_noise_std_error=reported,
        ldp_total_std_error=std_error, sampling_std_error=sampling,
    )
    return MeanEstimate(spec=spec, n=n, confidence=confidence, mean=mean, std_error=std_error,
                        reported_std_error=reported,
                        ci_low=low + (low_t + 1) * half_width, ci_high=low + (high_t + 1) * half_width,
                        central_dp=central)


def unit_interval(entry: Any, aggregate: Aggregate, mean_t: float, variance: float,
                  confidence: float) -> tuple[float, float]:
    "The interval for the mean of t, on the [-1, 1] scale (the module docstring gives the formulas)"
    n = aggregate.n
    binary = entry.binary_count(n, [int(x) for x in aggregate.counts])
    if binary is not None:  # Z = +-C: the count of ones is binomial; its interval, mapped through t = 2f - 1
        ones, slope = binary
        f_low, f_high = frequency_interval(np.array([ones]), n, (1 + slope) / 2, (1 - slope) / 2, confidence,
                                           agresti_coull=True)
        return min(2 * float(f_low[0]) - 1, mean_t), max(2 * float(f_high[0]) - 1, mean_t)
    k = z_value(confidence) ** 2 / n
    a = entry.device.variance(0.0)
    b = entry.device.variance(1.0) - a
    # {mu: (m - mu)^2 <= k V(mu)}, V(mu) = max(s^2 + max(m'^2 - mu^2, 0), a + b mu^2): a union of three intervals
    second = score_set(1 + k, mean_t, mean_t**2 - k * (variance + min(mean_t**2, 1.0)))
    sample = math.sqrt(k * variance)
    if 1 - k * b > 1e-12:
        noise = score_set(1 - k * b, mean_t, mean_t**2 - k * a)
    else:  # the noise variance grows faster than (m - mu)^2: its worst case over [-1, 1], in a normal interval
        width = math.sqrt(k * (a + b))
        noise = (mean_t - width, mean_t + width)
    return min(second[0], noise[0], mean_t - sample), max(second[1], noise[1], mean_t + sample)


def score_set(lead: float, mean_t: float, constant: float) -> tuple[float, float]:
    "The roots of lead mu^2 - 2 m mu + constant (lead > 0): where it is <= 0; it is <= 0 at mu = m"
    root = math.sqrt(max(mean_t**2 - lead * constant, 0.0))
    return (mean_t - root) / lead, (mean_t + root) / lead


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
