"""Estimates of a repeated-collection campaign: one period's mean (1BitMean) or histogram (dBitFlip) with its
standard error and interval, the change between two periods, and the per-period series.

With p', q' the probabilities that a sent bit is 1 for a memoized bit drawn with p, resp. q, after gamma's flip
(``RepeatedParams.sent_probabilities``; p' = p, q' = q without gamma):

**1BitMean** (Ding, Kulkarni, Yekhanin 2017, section 2.1, with alpha-point rounding, section 3.1).  P(sent 1) =
q' + t (p' - q') for a device at normalized rounded value t; alpha-point rounding is unbiased over the devices'
alphas and a mixture of Bernoullis is a Bernoulli, so the rate r of ones among n reports gives the unbiased mean
``low + (high - low) (r - q') / (p' - q')`` and the variance of one period's estimate is exactly 1BitMean's
without rounding: ``(high - low)^2 sum_i P_i (1 - P_i) / ((p' - q')^2 n^2)``, P_i = q' + t_i (p' - q') at the
devices' true normalized values t_i (:func:`mean_variance`): exact, not the worst case P (1 - P) <= 1/4 (16% more
at eps 1 on values near the bottom of the range; the variance test in tests/estimators tells the two apart).  SE:
that formula at the estimate (``estimators.intervals.support_std_errors``); interval: the Wilson and Agresti-Coull
hull of the support rate (``estimators.intervals.frequency_interval``) mapped to the range and clipped to it.

**dBitFlip** (same paper, section 2.2).  A device reports a bit for each of d buckets it sampled once; bucket v's
share is ``(k / (n d)) sum_{i: v sampled} (b_iv - q') / (p' - q')``, unbiased over the devices' samples (d
distinct buckets: v is sampled with probability d / k), with the exact variance
``(1/n) [(k/d) (f_v E_own + (1 - f_v) E_other) - f_v]`` where ``E_own = (p'(1-q')^2 + (1-p')q'^2) / (p'-q')^2``
and ``E_other = q'(1-q') / (p'-q')^2`` (:func:`histogram_variance`; since p' = 1 - q', E_own = E_other + 1, and
without gamma this is ``(k/d) e^(eps/2) / (e^(eps/2) - 1)^2 + f (k/d - 1)`` over n).  A device's bits for two
buckets are independent and it holds one value, so the buckets' estimates are uncorrelated.  SE: the larger of the
sample standard deviation of the devices' unbiased values (three values: from the counts alone) over sqrt(n) and
the formula at the estimate clipped to [0, 1]; interval: normal.

**Change** between two periods: ``after - before`` with SE ``sqrt(SE_before^2 + SE_after^2)``.  That is exact for
disjoint sets of devices and conservative for the same devices: memoization makes a device's two reports
positively correlated (equal when its rounded value did not move), never negatively, and the collector cannot
pair reports to use that.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from client_sdk.kinds.repeated import RepeatedParams

from ...errors import AggregateMismatch, NoReports
from ...intervals import frequency_interval, support_std_errors, z_value
from .aggregate import PeriodAggregate


@dataclass(frozen=True)
class PeriodMean:
    "One period's mean, its standard error and interval, from ``reports`` reports"

    mean: float
    standard_error: float
    interval: tuple[float, float]
    reports: int
    confidence: float = 0.95

    def to_json(self) -> dict[str, Any]:
        return {"mean": self.mean, "standard_error": self.standard_error, "interval": list(self.interval),
                "reports": self.reports, "confidence": self.confidence}


@dataclass(frozen=True)
class PeriodHistogram:
    "One period's bucket shares (unbiased: they may be negative and need not sum to 1), with SEs and intervals"

    shares: np.ndarray
    standard_errors: np.ndarray
    low: np.ndarray
    high: np.ndarray
    reports: int
    confidence: float = 0.95

    def to_json(self) -> dict[str, Any]:
        return {"shares": self.shares.tolist(), "standard_errors": self.standard_errors.tolist(),
                "intervals": np.stack([self.low, self.high], axis=1).tolist(), "reports": self.reports,
                "confidence": self.confidence}


@dataclass(frozen=True)
class Change:
    "after - before (a number for means, an array of shares for histograms), with its SE and interval"

    difference: Any
    standard_error: Any
    low: Any
    high: Any
    confidence: float = 0.95

    def to_json(self) -> dict[str, Any]:
        def plain(value: Any) -> Any:
            return value.tolist() if isinstance(value, np.ndarray) else value

        return {"difference": plain(self.difference), "standard_error": plain(self.standard_error),
                "interval": [plain(self.low), plain(self.high)], "confidence": self.confidence}


PeriodEstimate = PeriodMean | PeriodHistogram


def estimate_period(aggregate: PeriodAggregate, confidence: float = 0.95) -> PeriodEstimate:
    "The period's mean or histogram (by the campaign's mode); NoReports for an empty aggregate"
    if aggregate.reports == 0:
        raise NoReports("no reports in this period")
    if aggregate.params.mode == "mean":
        return _estimate_mean(aggregate, confidence)
    return _estimate_histogram(aggregate, confidence)


def _estimate_mean(aggregate: PeriodAggregate, confidence: float) -> PeriodMean:
    params, n = aggregate.params, aggregate.reports
    p, q = params.sent_probabilities()
    width = params.high - params.low
    ones = aggregate.ones[:1]
    mean = params.low + width * (int(ones[0]) / n - q) / (p - q)
    se = width * float(support_std_errors(ones / n, n, p, q)[0])
    unit_low, unit_high = frequency_interval(ones, n, p, q, confidence, agresti_coull=True)
    low = min(max(params.low + width * float(unit_low[0]), params.low), params.high)
    high = min(max(params.low + width * float(unit_high[0]), params.low), params.high)
    return PeriodMean(mean, se, (low, high), n, confidence)


def _unbiased_values(params: RepeatedParams) -> tuple[float, float]:
    "A device's unbiased value for a sampled bucket whose sent bit is 1, resp. 0 (0 for a bucket not sampled)"
    assert params.buckets is not None and params.bits is not None
    p, q = params.sent_probabilities()
    scale = params.buckets / params.bits / (p - q)
    return scale * (1 - q), -scale * q


def _estimate_histogram(aggregate: PeriodAggregate, confidence: float) -> PeriodHistogram:
    n = aggregate.reports
    one, zero = _unbiased_values(aggregate.params)
    ones, sampled = aggregate.ones.astype(np.float64), aggregate.sampled.astype(np.float64)
    shares = (ones * one + (sampled - ones) * zero) / n
    second = (ones * one**2 + (sampled - ones) * zero**2) / n
    sample = np.clip(second - shares**2, 0.0, None) * n / max(n - 1, 1) / n
    # few reports carry a bit for a bucket (n d / k): the sample variance of a skewed three-point value is then
    # often too small, and the formula at the estimate clipped to [0, 1] floors it
    se = np.sqrt(np.maximum(sample, histogram_variance(aggregate.params, np.clip(shares, 0.0, 1.0), n)))
    z = z_value(confidence)
    return PeriodHistogram(shares, se, shares - z * se, shares + z * se, n, confidence)


def estimate_change(before: PeriodEstimate, after: PeriodEstimate, confidence: float = 0.95) -> Change:
    "after - before with SE sqrt(SE_before^2 + SE_after^2) and a normal interval (conservative for shared devices)"
    if type(before) is not type(after):
        raise AggregateMismatch("a change is between two estimates of the same campaign")
    z = z_value(confidence)
    if isinstance(before, PeriodMean) and isinstance(after, PeriodMean):
        difference = after.mean - before.mean
        se: Any = math.hypot(before.standard_error, after.standard_error)
    else:
        assert isinstance(before, PeriodHistogram) and isinstance(after, PeriodHistogram)
        if before.shares.shape != after.shares.shape:
            raise AggregateMismatch("a change is between two estimates of the same campaign")
        difference = after.shares - before.shares
        se = np.hypot(before.standard_errors, after.standard_errors)
    return Change(difference, se, difference - z * se, difference + z * se, confidence)


def estimate_series(periods: Mapping[str, PeriodAggregate] | Sequence[tuple[str, PeriodAggregate]],
                    confidence: float = 0.95) -> list[tuple[str, PeriodEstimate]]:
    "(label, estimate) of every period with reports, in label order (labels sort in time order)"
    items = periods.items() if isinstance(periods, Mapping) else periods
    return [(label, estimate_period(aggregate, confidence))
            for label, aggregate in sorted(items, key=lambda item: item[0]) if aggregate.reports]


def mean_variance(params: RepeatedParams, values: np.ndarray) -> float:
    "The exact variance of one period's mean estimate over devices holding ``values`` (the formula above)"
    p, q = params.sent_probabilities()
    t = (np.clip(np.asarray(values, np.float64), params.low, params.high) - params.low) / (params.high - params.low)
    rate = q + t * (p - q)
    return float((params.high - params.low) ** 2 * np.sum(rate * (1 - rate)) / ((p - q) ** 2 * t.size**2))


def histogram_variance(params: RepeatedParams, shares: np.ndarray, reports: int) -> np.ndarray:
    "The variance of each bucket's share estimate from ``reports`` devices whose true shares are ``shares``"
    assert params.buckets is not None and params.bits is not None
    p, q = params.sent_probabilities()
    own = (p * (1 - q) ** 2 + (1 - p) * q**2) / (p - q) ** 2
    other = q * (1 - q) / (p - q) ** 2
    f = np.asarray(shares, np.float64)
    ratio = params.buckets / params.bits
    return (ratio * (f * own + (1 - f) * other) - f) / reports
