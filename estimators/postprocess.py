"""Consistency post-processing of frequency estimates (T. Wang et al., NDSS 2020).

Post-processing keeps the DP guarantee but loses unbiasedness, so these are always returned beside the unbiased
estimates, never in their place.

* Norm-Sub: clip negatives to 0 and subtract an equal amount from the positives until they sum to 1.  Its fixed
  point is the Euclidean projection onto the probability simplex, computed here directly (sort and threshold).
  The best default for distributions and set queries.
* Base-Cut: zero every estimate below ``z * SE`` with z the Bonferroni quantile Phi^-1(1 - alpha/d); best for
  full-domain squared error on sparse data.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np


def norm_sub(estimates: np.ndarray, total: float = 1.0) -> np.ndarray:
    "Norm-Sub's fixed point: the Euclidean projection of ``estimates`` onto {x >= 0, sum x = total}"
    return project_simplex(estimates, total)


def project_simplex(values: np.ndarray, total: float = 1.0) -> np.ndarray:
    "Euclidean projection onto {x >= 0, sum x = total}, by sort and threshold (Duchi et al., ICML 2008)"
    v = np.asarray(values, dtype=float)
    ordered = np.sort(v)[::-1]
    cumulative = np.cumsum(ordered) - total
    ranks = np.arange(1, len(v) + 1)
    rho = np.nonzero(ordered - cumulative / ranks > 0)[0][-1]
    theta = cumulative[rho] / (rho + 1)
    return np.maximum(v - theta, 0.0)


def base_cut(estimates: np.ndarray, std_errors: np.ndarray, alpha: float = 0.05) -> np.ndarray:
    "Estimates below the Bonferroni z-threshold times their standard error set to 0"
    v = np.asarray(estimates, dtype=float)
    threshold = base_cut_z(len(v), alpha) * np.asarray(std_errors, dtype=float)
    return np.where(v >= threshold, v, 0.0)


def base_cut_z(domain_size: int, alpha: float = 0.05) -> float:
    return NormalDist().inv_cdf(1 - alpha / domain_size)
