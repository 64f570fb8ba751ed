"""Tolerances for statistical tests: k standard errors, k from a Bonferroni bound."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats

# Tolerances are k standard errors.  Each statistical test in the suite makes a bounded number of comparisons,
# so k is the Bonferroni quantile for a family-wise false-alarm rate of 1e-4 over that many comparisons.


def k_sigma(comparisons: int = 1, alpha: float = 1e-4) -> float:
    "Two-sided normal quantile for ``comparisons`` simultaneous checks at family-wise level alpha"
    return float(stats.norm.ppf(1 - alpha / (2 * comparisons)))


def variance_tolerance(variance: float, repetitions: int, comparisons: int = 1) -> float:
    "k standard errors of a sample variance of normal data: sd(s^2) = variance sqrt(2/(R-1))"
    return k_sigma(comparisons) * variance * math.sqrt(2 / (repetitions - 1))


EXACT_SUPPORT = 1 << 23  # points of the n-fold convolution below which the second moment's law is computed exactly


def second_moment_bounds(offsets: Any, pmf: Any, n: int, comparisons: int = 1,
                         alpha: float = 1e-4) -> tuple[float, float]:
    """(low, high): the mean of x**2 over ``n`` independent draws of the integer noise ``(offsets, pmf)`` (centred,
    so this is the variance the draws show) lies in [low, high] except with probability alpha / comparisons.

    The sample variance of a few heavy-tailed draws (discrete Laplace: kurtosis 6) is skewed: the normal
    approximation var +- k var sqrt((kurt - 1) / n) misses its upper tail about ten times too often at n = 80.  So the
    law of the sum of x**2 is computed exactly (an n-fold convolution, by FFT) while it fits in EXACT_SUPPORT points,
    and only beyond, where n is large and the normal approximation holds, approximated."""
    offsets = np.asarray(offsets, dtype=np.int64)
    pmf = np.asarray(pmf, dtype=float) / float(np.sum(pmf))
    squares = offsets**2
    variance = float((pmf * squares).sum())
    tail = alpha / (2 * comparisons)
    top = int(squares.max())
    if n * top + 1 > EXACT_SUPPORT:
        kurtosis = float((pmf * squares.astype(float) ** 2).sum()) / variance**2
        spread = k_sigma(comparisons, alpha) * variance * math.sqrt((kurtosis - 1) / n)
        return variance - spread, variance + spread
    one = np.bincount(squares, weights=pmf, minlength=top + 1)
    size = 1 << (n * top).bit_length()
    law = np.fft.irfft(np.fft.rfft(one, size) ** n, size)[: n * top + 1].clip(min=0.0)
    cumulative = np.cumsum(law / law.sum())
    low = int(np.searchsorted(cumulative, tail, side="left"))  # P(sum < low) <= tail
    high = int(np.searchsorted(cumulative, 1 - tail, side="left"))  # P(sum > high) <= tail
    return low / n, high / n
