"""The quantiles kind's planner: the branching factor, the variance of range queries, and the n a quantile needs.

Every level's node estimate has variance about V h / n (V the oracle's per-report factor, h levels, n reports),
so the variance of any query of the consistent tree is V / n times a factor of the tree alone
(``client_sdk.kinds.quantiles.tree``), plus the sampling variance of a population share s, s (1 - s) / n.
"""

from __future__ import annotations

import math

import numpy as np

from client_sdk.kinds.quantiles import QuantilesParams, best_branching, range_variance_factor
from estimators.intervals import z_value

from .aggregate import noise_variances
from .inference import LevelCovariance, cdf_covariance


def average_range_variance(params: QuantilesParams, n: int) -> float:
    "The noise variance of a range query of the consistent tree, averaged over all ranges of buckets, at n reports"
    return range_variance_factor(params.buckets, params.branching) * noise_variances(params)[-1] / n


def cdf_variance_factors(params: QuantilesParams) -> np.ndarray:
    "Var of the CDF at each boundary in units of V / n (equal level sizes, noise only)"
    h = params.height
    diagonals = [np.full(params.level_size(level), float(h)) for level in range(1, h + 1)]
    covariance = LevelCovariance(diagonals, [np.zeros_like(d) for d in diagonals], [1] * h)
    c = cdf_covariance(covariance, [1.0 / h] * h, params.branching, params.leaves, params.buckets)
    return np.clip(np.diag(c), 0.0, None)


def reports_for_quantile(params: QuantilesParams, rank_error: float, p: float = 0.95,
                         confidence: float = 0.95) -> int:
    """The n for which the p-quantile's confidence interval is within +-``rank_error`` in rank (the CDF's interval
    at the boundaries near it has half-width <= rank_error), at the worst boundary of the tree:
    n = z^2 (V max_j c_j + p (1 - p)) / rank_error^2"""
    if not 0 < rank_error < 1 or not 0 < p < 1:
        raise ValueError("rank_error and p must be in (0, 1)")
    factor = float(cdf_variance_factors(params).max()) * noise_variances(params)[-1] + p * (1 - p)
    return math.ceil(z_value(confidence) ** 2 * factor / rank_error**2)


__all__ = ["average_range_variance", "best_branching", "cdf_variance_factors", "reports_for_quantile"]
