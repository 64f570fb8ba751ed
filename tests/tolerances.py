"""Tolerances for statistical tests: k standard errors, k from a Bonferroni bound."""

from __future__ import annotations

import math

from scipy import stats

# Tolerances are k standard errors.  Each statistical test in the suite makes a bounded number of comparisons,
# so k is the Bonferroni quantile for a family-wise false-alarm rate of 1e-4 over that many comparisons.


def k_sigma(comparisons: int = 1, alpha: float = 1e-4) -> float:
    "Two-sided normal quantile for ``comparisons`` simultaneous checks at family-wise level alpha"
    return float(stats.norm.ppf(1 - alpha / (2 * comparisons)))


def variance_tolerance(variance: float, repetitions: int, comparisons: int = 1) -> float:
    "k standard errors of a sample variance of normal data: sd(s^2) = variance sqrt(2/(R-1))"
    return k_sigma(comparisons) * variance * math.sqrt(2 / (repetitions - 1))
