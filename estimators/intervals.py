"""Confidence intervals for a support probability and their map to a frequency: the one interval every frequency
oracle and RAPPOR's direct (boolean, basic) decoding use.

A report supports a value with probability p* when the truth is that value and q* otherwise, so for users drawn
from a population the support count x of n reports is Binomial(n, pi), pi = q* + f (p* - q*).  The interval for
pi is the Wilson score interval (Wilson 1927) with the boundary correction of Brown, Cai and DasGupta ("Interval
Estimation for a Binomial Proportion", Statistical Science 2001, section 4.1.1): for x = 1, 2, 3 supports the
lower bound is the exact Poisson one, ``gammaincinv(x, alpha/2) / n`` (the lambda / n with
P(Poisson(lambda) >= x) = alpha / 2), and likewise the upper bound for n - x = 1, 2, 3.  Plain Wilson puts its
lower bound at x = 1 above q* when n q* is small (GRR at eps 8, d = 4096, n = 1000 covered an absent value 0.868
of the time); the corrected interval holds there.  It is mapped through f = (pi - q*) / (p* - q*) and never
clipped: the frequency estimate is unbiased and may leave [0, 1], and its interval always has positive width and
contains it.  Exact binomial coverage over a grid of mechanisms, epsilons, n and sparse and dense domains:
``tests/estimators/test_coverage_grid.py`` (docs/mechanisms.md).
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np

BOUNDARY_COUNTS = 3  # Brown, Cai & DasGupta: the Poisson bound replaces Wilson's for 1..3 supports


def z_value(confidence: float) -> float:
    "The two-sided normal quantile of ``confidence``"
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def support_interval(counts: np.ndarray, n: int, confidence: float, *,
                     agresti_coull: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The boundary-corrected Wilson interval for support probabilities, ``counts`` supports out of n each.
    With ``agresti_coull`` its hull with Agresti and Coull's interval (Am. Statistician 1998: x + z^2/2 supports
    of n + z^2, a normal interval there), which the mean of Duchi's count uses: Wilson's dips to an exact
    coverage of 0.921 at n = 30 (pi = 0.1179: its lower bound at 7 supports is above pi), the hull's stays at or
    above 0.933 for every pi and n >= 30 (0.938 at n = 100, 0.944 at n = 1,000)"""
    x = np.asarray(counts, dtype=np.float64)
    z = z_value(confidence)
    r = x / n
    shrink = 1 + z * z / n
    centre = (r + z * z / (2 * n)) / shrink
    half_width = z / shrink * np.sqrt(np.clip(r * (1 - r), 0.0, None) / n + z * z / (4 * n * n))
    low, high = centre - half_width, centre + half_width
    alpha = 1 - confidence
    for count in range(1, BOUNDARY_COUNTS + 1):
        bound = poisson_lower_bound(count, alpha / 2) / n
        low = np.where(x == count, bound, low)
        high = np.where(n - x == count, 1 - bound, high)
    if agresti_coull:
        centre = (x + z * z / 2) / (n + z * z)
        half_width = z * np.sqrt(centre * (1 - centre) / (n + z * z))
        low, high = np.minimum(low, centre - half_width), np.maximum(high, centre + half_width)
    return np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)


@functools.lru_cache(maxsize=64)
def poisson_lower_bound(count: int, tail: float) -> float:
    """The lambda with P(Poisson(lambda) >= count) = tail: the exact lower confidence bound of a Poisson mean
    (``scipy.special.gammaincinv(count, tail)``), by bisection in the standard library (a report from the
    database loads no scipy)"""
    def at_least(rate: float) -> float:
        return 1 - math.exp(-rate) * sum(rate**j / math.factorial(j) for j in range(count))

    low, high = 0.0, float(count)  # P(Poisson(count) >= count) > 1/2 > tail
    for _ in range(200):
        middle = (low + high) / 2
        if at_least(middle) < tail:
            low = middle
        else:
            high = middle
        if high - low <= 1e-15 * high:
            break
    return (low + high) / 2


def frequency_interval(counts: np.ndarray, n: int, p: float, q: float, confidence: float, *,
                       agresti_coull: bool = False) -> tuple[np.ndarray, np.ndarray]:
    "The support interval mapped through f = (pi - q*) / (p* - q*): the frequency's interval"
    low, high = support_interval(counts, n, confidence, agresti_coull=agresti_coull)
    mapped_low, mapped_high = (low - q) / (p - q), (high - q) / (p - q)
    estimates = (np.asarray(counts) / n - q) / (p - q)  # as the estimators compute it: rounding never leaves it out
    return (np.minimum(np.minimum(mapped_low, mapped_high), estimates),
            np.maximum(np.maximum(mapped_low, mapped_high), estimates))


def support_std_errors(r: np.ndarray, n: int, p: float, q: float) -> np.ndarray:
    "Standard errors of the frequencies, target population: the binomial variance at the estimate clipped to [0, 1]"
    support = np.clip(r, min(p, q), max(p, q))
    return np.sqrt(support * (1 - support) / n) / abs(p - q)
