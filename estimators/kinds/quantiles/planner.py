"""The quantiles kind's planner: the branching factor, the variance of range queries, and the n a quantile needs.

Every level's node estimate has variance about V h / n (V the oracle's per-report factor, h levels, n reports),
so the variance of any query of the consistent tree is V / n times a factor of the tree alone
(``client_sdk.kinds.quantiles.tree``), plus the sampling variance of a population share s, s (1 - s) / n.

In value units (:func:`quantile_halfwidth`, :func:`reports_for_quantile_value`) the answer needs an assumed
distribution (its share of each bucket: :func:`assumed_shares`): the CDF's exact covariance at n under it
(the estimator's own formula, ``inference``, with the true shares; it scales as 1 / n), and the pointwise CDF
intervals inverted (``estimate.pointwise_quantile_interval``, F linear within a bucket, the one-sided value where
the hull reaches an end of the range) for ``PLAN_DRAWS`` normal draws of the CDF's error from that covariance (a
fixed seed), the half-width not exceeded in ``share`` of them (tested against the real estimator by simulation).
The draws are of the linear CDF: the report inverts the isotonic CDF with its own, smaller variances where it
pools (the tails, small n), so there the planned n is conservative (an isotonic fit per draw would be 4000 fits
per n tried).  The report also widens an interval to hold its point estimate, which the draws leave out: the
estimate lies inside all but rarely.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from client_sdk.kinds.quantiles import QuantilesParams, best_branching, range_variance_factor
from estimators.intervals import z_value

from ..base import KindPlan
from .aggregate import noise_variances, support_probabilities
from .estimate import DEFAULT_QUANTILES, invert_cdf, pointwise_quantile_interval
from .inference import LevelCovariance, cdf_covariance

MAX_PLANNED_REPORTS = 10**12
PLAN_DRAWS = 4000
PLAN_SEED = 34  # fixed: the planner's answer is deterministic
DISTRIBUTIONS = ("uniform", "normal:MEAN,SD", "lognormal:MU,SIGMA", "a report's JSON file (its bucket shares)")


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


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def assumed_shares(params: QuantilesParams, distribution: str | Mapping[str, Any]) -> np.ndarray:
    """Each bucket's share under an assumed distribution (values outside the range clamped into the end buckets):
    "uniform", "normal:MEAN,SD", "lognormal:MU,SIGMA" (of the log of the value), or an estimate's JSON (a pilot
    campaign's ``buckets``, negative shares set to 0); ValueError naming the form otherwise"""
    if isinstance(distribution, Mapping):
        shares = np.clip(np.asarray(distribution.get("buckets", []), dtype=np.float64), 0.0, None)
        if shares.shape != (params.buckets,) or shares.sum() <= 0:
            raise ValueError(f"the estimate's buckets must be {params.buckets} shares, not all zero")
        return shares / shares.sum()
    name, _, arguments = distribution.partition(":")
    boundaries = np.asarray(params.boundaries)
    try:
        numbers = [float(a) for a in arguments.split(",")] if arguments else []
    except ValueError:
        numbers = []
    if name == "uniform" and not numbers:
        cdf = (boundaries - params.low) / (params.high - params.low)
    elif name == "normal" and len(numbers) == 2 and numbers[1] > 0:
        cdf = _normal_cdf((boundaries - numbers[0]) / numbers[1])
    elif name == "lognormal" and len(numbers) == 2 and numbers[1] > 0:
        positive = np.maximum(boundaries, 1e-300)
        cdf = np.where(boundaries > 0, _normal_cdf((np.log(positive) - numbers[0]) / numbers[1]), 0.0)
    else:
        raise ValueError(f"the distribution must be one of {', '.join(DISTRIBUTIONS)}: not {distribution!r}")
    cdf[0], cdf[-1] = 0.0, 1.0  # clamped into the range
    return np.diff(cdf)


def unit_cdf_covariance(params: QuantilesParams, shares: Sequence[float] | np.ndarray) -> np.ndarray:
    "The exact covariance of the consistent CDF at n = 1 (divide by n; levels of n / h reports each)"
    padded = np.zeros(params.leaves)
    padded[: params.buckets] = shares
    levels = [padded.reshape(params.level_size(level), -1).sum(axis=1) for level in range(1, params.height + 1)]
    h = params.height
    covariance = LevelCovariance.of(levels, [1] * h, support_probabilities(params))
    precisions = [1.0 / v for v in noise_variances(params)]
    return cdf_covariance(covariance, precisions, params.branching, params.leaves, params.buckets) * h


def _noise_root(unit_covariance: np.ndarray) -> np.ndarray:
    "A square root of the covariance (symmetric: it may be singular at the range's ends)"
    values, vectors = np.linalg.eigh(unit_covariance)
    return vectors * np.sqrt(np.clip(values, 0.0, None))


class _QuantilePlan:
    "The CDF under the assumed shares, its standard errors and PLAN_DRAWS draws of its error, all at n = 1"

    def __init__(self, params: QuantilesParams, shares: Sequence[float] | np.ndarray) -> None:
        c = unit_cdf_covariance(params, shares)
        self.boundaries = np.asarray(params.boundaries)
        self.cdf = np.concatenate([[0.0], np.cumsum(shares)])[:, None]
        self.variances, self.adjacent = np.diag(c).copy(), np.diag(c, 1).copy()
        self.noise = _noise_root(c) @ np.random.default_rng(PLAN_SEED).standard_normal((len(self.variances),
                                                                                         PLAN_DRAWS))

    def halfwidth(self, n: int, p: float, confidence: float, share: float) -> float:
        "The reported interval's half-width (estimate.pointwise_quantile_interval for every draw) at n reports"
        low, high = pointwise_quantile_interval(self.boundaries, self.cdf + self.noise / math.sqrt(n),
                                                self.variances / n, self.adjacent / n, p, z_value(confidence),
                                                z_value(1 - 2 * (1 - confidence)))
        return float(np.quantile((high - low) / 2, share))


def quantile_halfwidth(params: QuantilesParams, shares: Sequence[float] | np.ndarray, n: int, p: float = 0.95, *,
                       confidence: float = 0.95, share: float = 0.9) -> float:
    "The p-quantile interval's half-width in value units at n reports, not exceeded in ``share`` of runs"
    return _QuantilePlan(params, shares).halfwidth(n, p, confidence, share)


def reports_for_quantile_value(params: QuantilesParams, shares: Sequence[float] | np.ndarray, halfwidth: float,
                               p: float = 0.95, *, confidence: float = 0.95, share: float = 0.9) -> int:
    """The smallest n (to 1 %) at which the p-quantile's interval has half-width <= ``halfwidth`` (value units) in
    ``share`` of runs under the assumed bucket shares; ValueError when no n up to MAX_PLANNED_REPORTS does"""
    if not 0 < p < 1 or not halfwidth > 0 or not 0 < share < 1:
        raise ValueError("p and share must be in (0, 1) and the half-width positive")
    plan = _QuantilePlan(params, shares)
    floor = plan.halfwidth(MAX_PLANNED_REPORTS, p, confidence, share)
    if floor > halfwidth:
        raise ValueError(f"+-{halfwidth:g} at p{100 * p:g} needs more than {MAX_PLANNED_REPORTS:.0e} reports "
                         f"(+-{floor:g} there)")
    low, high = 0.0, math.log(MAX_PLANNED_REPORTS)  # fits at exp(high); the half-width falls with n (bisection)
    while high - low > 0.01:
        middle = (low + high) / 2
        if plan.halfwidth(math.ceil(math.exp(middle)), p, confidence, share) <= halfwidth:
            high = middle
        else:
            low = middle
    return math.ceil(math.exp(high))


def plan_quantiles(spec: Any, n: int, question: Mapping[str, Any]) -> KindPlan:
    """``ldp-telemetry plan --spec`` for a quantiles spec: per quantile (``question["quantiles"]``, default p50, p90,
    p95, p99) its value under the assumed distribution (``assume``: :func:`assumed_shares`, default uniform), the
    interval's half-width at n and, with ``target_halfwidth``, the n that gives it, each in ``share`` of runs"""
    params: QuantilesParams = spec.params
    confidence, share = float(question.get("confidence", 0.95)), float(question.get("share") or 0.9)
    assume = question.get("assume") or "uniform"
    target = question.get("target_halfwidth")
    shares = assumed_shares(params, assume)
    plan = _QuantilePlan(params, shares)
    boundaries, cdf = np.asarray(params.boundaries), np.concatenate([[0.0], np.cumsum(shares)])
    columns = ["quantile", "assumed value", "CI +-"] + ([f"n for +-{target:g}"] if target is not None else [])
    rows: list[list[Any]] = []
    for p in question.get("quantiles") or DEFAULT_QUANTILES:
        row: list[Any] = [f"p{100 * p:g}", invert_cdf(boundaries, cdf, p), plan.halfwidth(n, p, confidence, share)]
        if target is not None:
            try:
                row.append(reports_for_quantile_value(params, shares, target, p, confidence=confidence,
                                                      share=share))
            except ValueError:
                row.append(None)  # beyond MAX_PLANNED_REPORTS
        rows.append(row)
    unit = f" {spec.unit}" if spec.unit else ""
    header = (f"quantiles campaign {spec.name}: epsilon = {params.epsilon:g}, n = {n:,}, {params.buckets} "
              f"{params.bucketing} buckets over {params.low:g}..{params.high:g}{unit}, B = {params.branching}, "
              f"h = {params.height}; {confidence:.0%} intervals")
    assumed = "an estimate's buckets" if isinstance(assume, Mapping) else assume
    notes = [f"values assume the distribution {assumed}; CI +- (value units): the half-width not exceeded in "
             f"{share:.0%} of runs (the estimator's interval, simulated from the CDF's covariance)"]
    if target is not None and any(row[-1] is None for row in rows):
        notes.append(f"n for +-{target:g}: none up to {MAX_PLANNED_REPORTS:.0e} reports")
    return KindPlan(header, columns, rows, notes)


__all__ = ["DISTRIBUTIONS", "assumed_shares", "average_range_variance", "best_branching", "cdf_variance_factors",
           "plan_quantiles", "quantile_halfwidth", "reports_for_quantile", "reports_for_quantile_value",
           "unit_cdf_covariance"]
