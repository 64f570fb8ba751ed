"""A quantiles campaign's estimate: the consistent tree, the CDF with a simultaneous band, ranges, quantiles, mean.

* level estimates   each level's de-biased node frequencies (f = (support/n_l - q*)/(p* - q*)) and standard errors
                    (population target, ``estimators.intervals.support_std_errors``)
* consistent tree   Hay et al. 2010 weighted averaging (weights n_l / V_l) and mean consistency from the root
                    (``inference``); unbiased, as a linear map of unbiased level estimates
* covariances       exact for that linear map: the CDF's at every boundary is W' Sigma W (``inference``), Sigma
                    plugged in with the consistent tree's frequencies clipped to [0, 1]
* ranges            F(r) - F(l), SE from the CDF covariance, normal 95% interval
* CDF band          simultaneous: F +- c SE with c the 95% quantile of max_j |Z_j|, Z ~ N(0, corr(CDF)), by
                    simulation (``band_draws`` draws from a fixed seed: the estimate is deterministic), never above
                    Bonferroni's z_(1 - alpha / 2m) over the m interior boundaries
* quantiles         the point estimate interpolates the monotone CDF (running maximum, clipped) within a bucket;
                    the interval inverts the pointwise CDF intervals, made monotone (upper: running maximum; lower:
                    running minimum from the right): [lower edge of the bucket where the upper bound reaches p, the
                    boundary where the lower bound does].  Each side fails only when the pointwise interval at one
                    fixed boundary (next to the true quantile) fails on that side, so coverage >= 1 - alpha up to
                    the normal approximation (bucket resolution makes it conservative)
* mean              sum over buckets of frequency x bucket midpoint (the bucketed distribution's mean: within half a
                    bucket of the true one), SE from the same covariance
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from client_sdk.kinds.quantiles import QuantilesParams
from estimators.errors import NoReports
from estimators.intervals import support_std_errors, z_value

from .aggregate import QuantilesAggregate, level_frequencies, noise_variances, support_probabilities
from .inference import LevelCovariance, adjoint, cdf_covariance, consistent_levels

DEFAULT_QUANTILES = (0.5, 0.9, 0.95, 0.99)
BAND_DRAWS = 2000
BAND_SEED = 20100913
SMALL_PRODUCT = 1 << 23  # multiply-adds  # fixed: the same aggregate always gives the same band


@dataclass
class Interval:
    "An estimate with its standard error and confidence interval"

    estimate: float
    std_error: float
    ci_low: float
    ci_high: float

    def to_dict(self) -> dict:
        return {"estimate": self.estimate, "std_error": self.std_error, "ci_low": self.ci_low,
                "ci_high": self.ci_high}


@dataclass
class QuantileRow:
    "The p-quantile's estimate (in the values' unit) and its interval"

    p: float
    estimate: float
    ci_low: float
    ci_high: float


@dataclass
class QuantilesEstimate:
    "The estimate of one window of a quantiles campaign (module docstring)"

    params: QuantilesParams
    n: int
    confidence: float
    level_estimates: list[np.ndarray]
    level_std_errors: list[np.ndarray]
    leaves: np.ndarray  # consistent leaf frequencies, padding included
    cdf: np.ndarray  # F at the buckets+1 boundaries
    cdf_covariance: np.ndarray
    band_critical: float
    quantiles: list[QuantileRow]
    mean: Interval
    extra: dict = field(default_factory=dict)

    @property
    def boundaries(self) -> np.ndarray:
        return np.asarray(self.params.boundaries)

    @property
    def cdf_std_errors(self) -> np.ndarray:
        return np.sqrt(np.clip(np.diag(self.cdf_covariance), 0.0, None))

    @property
    def frequencies(self) -> np.ndarray:
        "The consistent frequency of each real bucket"
        return self.leaves[: self.params.buckets]

    def cdf_intervals(self) -> tuple[np.ndarray, np.ndarray]:
        "Pointwise intervals of F at the boundaries"
        half = z_value(self.confidence) * self.cdf_std_errors
        return self.cdf - half, self.cdf + half

    def cdf_band(self) -> tuple[np.ndarray, np.ndarray]:
        "The simultaneous band of F at the boundaries"
        half = self.band_critical * self.cdf_std_errors
        return self.cdf - half, self.cdf + half

    def range_frequency(self, first: int, stop: int) -> Interval:
        "The share of values in buckets first..stop-1 (0 <= first < stop <= buckets), with SE and interval"
        if not 0 <= first < stop <= self.params.buckets:
            raise ValueError(f"a range of buckets needs 0 <= first < stop <= {self.params.buckets}")
        c = self.cdf_covariance
        estimate = float(self.cdf[stop] - self.cdf[first])
        se = float(np.sqrt(max(c[stop, stop] + c[first, first] - 2 * c[first, stop], 0.0)))
        half = z_value(self.confidence) * se
        return Interval(estimate, se, estimate - half, estimate + half)

    def to_json(self) -> dict[str, Any]:
        low, high = self.cdf_intervals()
        band_low, band_high = self.cdf_band()
        return {
            "kind": "quantiles", "n": self.n, "confidence": self.confidence, "epsilon": self.params.epsilon,
            "params": self.params.to_dict(), "derived": self.params.derived(),
            "cdf": [{"boundary": float(b), "cdf": float(f), "std_error": float(se), "ci_low": float(lo),
                     "ci_high": float(hi), "band_low": float(bl), "band_high": float(bh)}
                    for b, f, se, lo, hi, bl, bh in zip(self.boundaries, self.cdf, self.cdf_std_errors, low, high,
                                                        band_low, band_high)],
            "band": {"critical": self.band_critical, "method": "max-|z| over the boundaries, simulated from the "
                                                             "CDF's covariance; at most Bonferroni's"},
            "buckets": [float(f) for f in self.frequencies],
            "quantiles": [{"p": row.p, "estimate": row.estimate, "ci_low": row.ci_low, "ci_high": row.ci_high}
                          for row in self.quantiles],
            "quantile_interval": "the pointwise CDF intervals inverted",
            "values": [],  # no per-value rows: the quantiles, the CDF and the histogram are this kind's
            # the mean of the bucketed distribution, in the members every mean estimate has
            "mean": self.mean.estimate, "std_error": self.mean.std_error, "ci_low": self.mean.ci_low,
            "ci_high": self.mean.ci_high,
            "histogram": self.histogram(),
            **self.extra,
        }

    def histogram(self) -> list[dict[str, float]]:
        "Each real bucket's [low, high), consistent frequency, SE and interval (as :meth:`range_frequency`)"
        boundaries = self.boundaries
        return [{"low": float(boundaries[i]), "high": float(boundaries[i + 1]),
                 **self.range_frequency(i, i + 1).to_dict()} for i in range(self.params.buckets)]


def consistent_tree(params: QuantilesParams, aggregate: QuantilesAggregate) -> tuple[list[np.ndarray], list[float]]:
    "(the consistent levels 1..h, the per-node precisions n_l / V_l used to weight them)"
    precisions = [float(n) / v for n, v in zip(aggregate.sizes, noise_variances(params))]
    levels = consistent_levels(level_frequencies(params, aggregate), precisions, params.branching)
    return levels, precisions


def level_covariance(params: QuantilesParams, aggregate: QuantilesAggregate,
                     frequencies: list[np.ndarray]) -> LevelCovariance:
    "Sigma of the level estimates with ``frequencies`` (the truth in tests, the consistent tree in estimates)"
    return LevelCovariance.of(frequencies, aggregate.sizes.tolist(), support_probabilities(params))


def band_critical_value(covariance: np.ndarray, confidence: float, draws: int = BAND_DRAWS) -> float:
    "c with P(max_j |F_j - F'_j| / SE_j <= c) = confidence under N(0, covariance), simulated; Bonferroni at most"
    se = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    inner = se > 1e-12 * max(float(se.max()), 1e-300)
    m = int(inner.sum())
    if m == 0:
        return z_value(confidence)
    bonferroni = z_value(1 - (1 - confidence) / m)
    correlation = covariance[np.ix_(inner, inner)] / np.outer(se[inner], se[inner])
    try:  # a Cholesky factor with a little jitter; the symmetric square root when the matrix is singular
        root = np.linalg.cholesky(correlation + 1e-10 * np.eye(m))
    except np.linalg.LinAlgError:
        values, vectors = np.linalg.eigh(correlation)
        root = vectors * np.sqrt(np.clip(values, 0.0, None))
    rng = np.random.default_rng(BAND_SEED)
    normal = rng.standard_normal((m, draws))
    # small bands without BLAS: its threads cost more than the product there (milliseconds per call on 2 cores)
    draws_of = np.einsum("ij,jk->ik", root, normal) if m * m * draws <= SMALL_PRODUCT else root @ normal
    maxima = np.abs(draws_of).max(axis=0)
    return float(min(np.quantile(maxima, confidence), bonferroni))


def invert_cdf(boundaries: np.ndarray, cdf: np.ndarray, p: float) -> float:
    "The p-quantile of the monotone CDF, linear within the bucket where it reaches p"
    monotone = np.clip(np.maximum.accumulate(cdf), 0.0, 1.0)
    j = int(np.searchsorted(monotone, p, side="left"))
    if j == 0:
        return float(boundaries[0])
    if j >= len(boundaries):
        return float(boundaries[-1])
    below, above = monotone[j - 1], monotone[j]
    share = (p - below) / (above - below) if above > below else 1.0
    return float(boundaries[j - 1] + share * (boundaries[j] - boundaries[j - 1]))


def quantile_interval(boundaries: np.ndarray, low: np.ndarray, high: np.ndarray, p: float) -> tuple[float, float]:
    "The interval of the p-quantile from pointwise CDF intervals [low, high] (module docstring)"
    upper = np.maximum.accumulate(high)
    lower = np.minimum.accumulate(low[::-1])[::-1]
    last = len(boundaries) - 1
    j_low = int(np.argmax(upper >= p)) if bool(np.any(upper >= p)) else last
    j_high = int(np.argmax(lower >= p)) if bool(np.any(lower >= p)) else last
    return float(boundaries[max(j_low - 1, 0)]), float(boundaries[max(j_high, j_low)])


def estimate_quantiles(params: QuantilesParams, aggregate: QuantilesAggregate, *, confidence: float = 0.95,
                       quantiles: tuple[float, ...] = DEFAULT_QUANTILES,
                       band_draws: int = BAND_DRAWS) -> QuantilesEstimate:
    "The window's estimate (module docstring); NoReports for an empty aggregate"
    if aggregate.n <= 0:
        raise NoReports("this quantiles campaign has no reports in this window")
    levels, precisions = consistent_tree(params, aggregate)
    raw = level_frequencies(params, aggregate)
    raw_se = []
    for level, (p, q) in enumerate(support_probabilities(params), start=1):
        n = int(aggregate.sizes[level - 1])
        r = raw[level - 1] * (p - q) + q
        raw_se.append(support_std_errors(r, n, p, q) if n else np.full(params.level_size(level), np.inf))
    covariance = level_covariance(params, aggregate, levels)
    leaves = levels[-1]
    d = params.buckets
    cdf = np.concatenate([[0.0], np.cumsum(leaves[:d])])
    c = cdf_covariance(covariance, precisions, params.branching, params.leaves, d)
    boundaries = np.asarray(params.boundaries)
    z = z_value(confidence)
    se = np.sqrt(np.clip(np.diag(c), 0.0, None))
    rows = []
    for p in quantiles:
        lo, hi = quantile_interval(boundaries, cdf - z * se, cdf + z * se, p)
        rows.append(QuantileRow(p, invert_cdf(boundaries, cdf, p), lo, hi))
    midpoints = np.zeros(params.leaves)
    midpoints[:d] = (boundaries[:-1] + boundaries[1:]) / 2
    mean = float(midpoints[:d] @ leaves[:d])
    mean_weights = adjoint(midpoints[:, None], precisions, params.branching)
    mean_se = float(np.sqrt(max(covariance.quadratic(mean_weights)[0, 0], 0.0)))
    return QuantilesEstimate(
        params=params, n=aggregate.n, confidence=confidence, level_estimates=raw, level_std_errors=raw_se,
        leaves=leaves, cdf=cdf, cdf_covariance=c, band_critical=band_critical_value(c, confidence, band_draws),
        quantiles=rows, mean=Interval(mean, mean_se, mean - z * mean_se, mean + z * mean_se),
    )
