"""A quantiles campaign's estimate: the consistent tree, the CDF with a simultaneous band, ranges, quantiles, mean.

* level estimates   each level's de-biased node frequencies (f = (support/n_l - q*)/(p* - q*)) and standard errors
                    (population target, ``estimators.intervals.support_std_errors``)
* consistent tree   Hay et al. 2010 weighted averaging (weights n_l / V_l) and mean consistency from the root
                    (``inference``); unbiased, as a linear map of unbiased level estimates
* covariances       exact for that linear map: the CDF's at every boundary is W' Sigma W (``inference``), Sigma
                    plugged in with the consistent tree's frequencies clipped to [0, 1]
* ranges            F(r) - F(l), SE from the CDF covariance, normal 95% interval
* CDF band          simultaneous: F +- c SE with c the confidence quantile of max_j |e_j| / SE_j over the interior
                    boundaries, e the estimator's own error: ``band_draws`` exact normal draws of every level's
                    error (Sigma_l, ``inference.level_noise_draws``) pushed through the same constrained inference
                    (``inference.cdf_noise_draws``), from a fixed seed (the estimate is deterministic)
* monotone CDF      the isotonic regression of the CDF (pool adjacent violators, :func:`isotonic_cdf`), clipped to
                    [0, 1]: the point estimates of quantiles read it (the linear CDF stays the ranges' unbiased one)
* quantiles         the p-quantile of the CDF interpolated linearly within each bucket (the bucketed
                    distribution's, as a histogram's).  The point estimate inverts the monotone CDF G.  The 95%
                    interval is the hull of {v : |G(v) - p| <= z SE_G(v)} (:func:`pointwise_quantile_interval`
                    on G, solved exactly per bucket, G and its variance interpolating the boundaries'), with
                    SE_G the isotonic CDF's own standard error (:func:`isotonic_variances`): a pooled boundary is
                    the mean of the linear CDF over its block, whose variance is the block's mean covariance.  Why
                    not the linear CDF's set {v : |F(v) - p| <= z SE(v)} (kept as ``pointwise_set``): it holds
                    the true quantile t at 1 - alpha, but its hull covers 0.975-1.0 in the tails, where F-hat
                    wanders within z SE of p over a long stretch of values and SE(v) grows away from the top, so
                    the hull's ends are the first and last of many crossings.  G is monotone (no crossings of
                    noise), and its spread where it pools (the tails, small n) is about half the linear SE
                    (measured: p99, n = 1e4), so the linear SE on G would over-cover as much.  Conditioning on
                    the pooling leaves out the pooling's own randomness, so SE_G is an approximation: where F is
                    flat against its noise (tails at 1,024 buckets) a short block below the true quantile has a
                    larger SE_G than the long one holding it, and the hull over-covers (docs/mechanisms.md,
                    ``benchmarks/quantiles_coverage.py``).  The range's ends are known (F = 0, and 1 without
                    padding) and never pooled: a block holding one would take its zero variance.  Where the hull
                    reaches the range's top, or G's interval at the estimate passes 1 (not the bottom), the high
                    end cannot miss, so the low end is the hull's at the one-sided critical value of the same
                    confidence (1.645 at 95%); the mirror case at the bottom.
                    Inverting the simultaneous band instead (``simultaneous_low``/``simultaneous_high``, the
                    linear CDF) holds every quantile at once and is wider
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
from .inference import (
    LevelCovariance,
    adjoint,
    cdf_covariance,
    cdf_noise_draws,
    consistent_levels,
    level_noise_draws,
)

DEFAULT_QUANTILES = (0.5, 0.9, 0.95, 0.99)
BAND_DRAWS = 2000
BAND_SEED = 20100913
SMALL_PRODUCT = 1 << 23  # multiply-adds  # fixed: the same aggregate always gives the same band
BAND_METHOD = ("max |error| / SE over the boundaries, the error simulated exactly: normal draws of each level's "
               "error pushed through the constrained inference")
QUANTILE_INTERVAL_METHOD = ("ci_low..ci_high: the isotonic CDF's pointwise intervals inverted, with its own "
                            "(pooled) variances, F linear within a bucket; simultaneous_low..simultaneous_high: "
                            "the simultaneous band inverted")


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
    """The p-quantile's estimate (in the values' unit), its pointwise interval (ci_low, ci_high: the isotonic CDF's
    pointwise intervals inverted) and the interval from the simultaneous band (holding for all quantiles at once)"""

    p: float
    estimate: float
    ci_low: float
    ci_high: float
    simultaneous_low: float = float("nan")
    simultaneous_high: float = float("nan")
    pointwise_set: tuple[tuple[float, float], ...] = ()  # the values whose linear CDF's interval holds p


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
    monotone_cdf: np.ndarray | None = None  # isotonic_cdf(cdf): what the quantiles' point estimates read

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
            "band": {"critical": self.band_critical, "method": BAND_METHOD},
            "buckets": [float(f) for f in self.frequencies],
            "quantiles": [{"p": row.p, "estimate": row.estimate, "ci_low": row.ci_low, "ci_high": row.ci_high,
                           "simultaneous_low": row.simultaneous_low, "simultaneous_high": row.simultaneous_high,
                           "pointwise_set": [list(piece) for piece in row.pointwise_set]}
                          for row in self.quantiles],
            "quantile_interval": QUANTILE_INTERVAL_METHOD,
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
    """The p-quantile's interval at bucket resolution from CDF intervals [low, high] at the boundaries, made monotone:
    [lower edge of the bucket where the upper bound reaches p, the boundary where the lower bound does].
    Conservative (its ends are boundaries); the estimate uses :func:`pointwise_quantile_interval`"""
    upper = np.maximum.accumulate(high)
    lower = np.minimum.accumulate(low[::-1])[::-1]
    last = len(boundaries) - 1
    j_low = int(np.argmax(upper >= p)) if bool(np.any(upper >= p)) else last
    j_high = int(np.argmax(lower >= p)) if bool(np.any(lower >= p)) else last
    return float(boundaries[max(j_low - 1, 0)]), float(boundaries[max(j_high, j_low)])


def isotonic_blocks(cdf: np.ndarray, known: tuple[bool, bool] = (False, False)) -> tuple[np.ndarray, np.ndarray,
                                                                                            np.ndarray]:
    """The least-squares non-decreasing fit to ``cdf`` by pool adjacent violators, as its blocks: (first index,
    length, value) of each run of pooled entries, the value the mean of ``cdf`` over the run (unclipped).  An end
    marked ``known`` (first, last: F = 0 at the range's bottom, 1 at its top, not estimates) is a block of its own,
    never pooled: averaging an estimate with a known value would lend it the known value's zero variance"""
    values_in = np.asarray(cdf, dtype=np.float64)
    first, stop = int(known[0]), len(values_in) - int(known[1])
    starts: list[int] = list(range(first))
    counts: list[int] = [1] * first
    values: list[float] = [float(v) for v in values_in[:first]]
    for index in range(first, stop):
        total, count, start = float(values_in[index]), 1, index
        while len(values) > first and values[-1] >= total / count:  # pool while the previous mean is not below
            total += values.pop() * counts[-1]
            count += counts.pop()
            start = starts.pop()
        starts.append(start)
        counts.append(count)
        values.append(total / count)
    for index in range(stop, len(values_in)):
        starts.append(index)
        counts.append(1)
        values.append(float(values_in[index]))
    return np.asarray(starts, dtype=np.int64), np.asarray(counts, dtype=np.int64), np.asarray(values)


def known_ends(covariance: np.ndarray) -> tuple[bool, bool]:
    "Whether the CDF's first and last boundary are known exactly (variance 0: F = 0 at the bottom; 1 at the top "
    "unless the tree pads the range with leaves of its own)"
    variances = np.diag(np.asarray(covariance, dtype=np.float64))
    tiny = 1e-12 * max(float(variances.max(initial=0.0)), 1e-300)
    return bool(variances[0] <= tiny), bool(variances[-1] <= tiny)


def isotonic_cdf(cdf: np.ndarray, known: tuple[bool, bool] = (False, False)) -> np.ndarray:
    "The least-squares non-decreasing fit to ``cdf`` (:func:`isotonic_blocks`, ``known`` ends), clipped to [0, 1]"
    _, counts, values = isotonic_blocks(cdf, known)
    return np.clip(np.repeat(values, counts), 0.0, 1.0)


def isotonic_variances(cdf: np.ndarray, covariance: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The variance of the isotonic CDF at each boundary and the covariance of adjacent boundaries, given its
    blocks (the ends known where their variance is 0, :func:`known_ends`): a pooled boundary's value is the mean of
    the linear CDF over its block, so its variance is the mean of ``covariance`` over the block (less than a
    boundary's own where the fit pools: the tails, small n), and two boundaries' covariance is the mean over their
    two blocks.  A block clipped at 0 or 1 keeps its mean's variance (the clipping moves the value, the uncertainty
    of where F reaches p stays)"""
    c = np.asarray(covariance, dtype=np.float64)
    starts, counts, _ = isotonic_blocks(cdf, known_ends(c))
    block_means = np.add.reduceat(np.add.reduceat(c, starts, axis=0), starts, axis=1) / np.outer(counts, counts)
    block = np.repeat(np.arange(len(starts)), counts)
    return np.diag(block_means)[block], block_means[block[:-1], block[1:]]


def band_critical_from_draws(errors: np.ndarray, std_errors: np.ndarray, confidence: float) -> float:
    """c with P(max_j |e_j| / SE_j <= c) = confidence over draws ``errors`` (boundaries x draws) of the CDF's error,
    over the boundaries with SE_j > 0; z_(confidence) when there is none"""
    se = np.asarray(std_errors, dtype=np.float64)
    inner = se > 1e-12 * max(float(se.max(initial=0.0)), 1e-300)
    if not bool(np.any(inner)):
        return z_value(confidence)
    maxima = np.abs(errors[inner] / se[inner, None]).max(axis=0)
    return float(np.quantile(maxima, confidence))


def _first_and_last_roots(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    "The smallest and largest s in [0, 1] with a s^2 + 2 b s + c = 0 (nan where none)"
    linear = np.abs(a) <= 1e-12 * (np.abs(b) + np.abs(c) + 1e-300)
    discriminant = b * b - a * c
    root = np.sqrt(np.where(discriminant >= 0, discriminant, np.nan))
    with np.errstate(divide="ignore", invalid="ignore"):
        one = np.where(linear, -c / (2 * b), (-b - root) / a)
        two = np.where(linear, one, (-b + root) / a)
    inside = [np.where((r >= 0) & (r <= 1), r, np.nan) for r in (one, two)]
    with np.errstate(invalid="ignore"):
        return np.fmin(inside[0], inside[1]), np.fmax(inside[0], inside[1])


def _hull(boundaries: np.ndarray, f: np.ndarray, c00: np.ndarray, c11: np.ndarray, c01: np.ndarray, p: float,
          z: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    "(low, high, at_bottom, at_top) of :func:`pointwise_quantile_interval` at z for each column of f"
    e, d = f[:-1] - p, f[1:] - f[:-1]
    z2 = z * z
    a = d * d - z2 * (c00 + c11 - 2 * c01)
    b = e * d + z2 * (c00 - c01)
    c = e * e - z2 * c00
    at_start, at_end = c <= 0, a + 2 * b + c <= 0
    first_root, last_root = _first_and_last_roots(a, b, c)
    low_share = np.where(at_start, 0.0, first_root)
    high_share = np.where(at_end, 1.0, last_root)
    nonempty = ~np.isnan(low_share)
    widths = np.diff(boundaries)[:, None]
    columns = np.arange(f.shape[1])
    first = np.argmax(nonempty, axis=0)
    last = len(widths) - 1 - np.argmax(nonempty[::-1], axis=0)
    low = boundaries[first] + low_share[first, columns] * widths[first, 0]
    high = boundaries[last] + high_share[last, columns] * widths[last, 0]
    none = ~nonempty.any(axis=0)
    at_bottom = ~none & (first == 0) & (low_share[first, columns] == 0.0)
    at_top = ~none & (last == len(widths) - 1) & (high_share[last, columns] == 1.0)
    nowhere = np.where(f[-1] < p, boundaries[-1], boundaries[0])
    return np.where(none, nowhere, low), np.where(none, nowhere, high), at_bottom, at_top


def _estimate_position(f: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray]:
    "(bucket, share of its width) where the running maximum of f reaches p, per column (as :func:`invert_cdf`)"
    monotone = np.maximum.accumulate(f, axis=0)
    reached = monotone >= p
    last = f.shape[0] - 2
    bucket = np.where(reached.any(axis=0), np.clip(np.argmax(reached, axis=0) - 1, 0, last), last)
    columns = np.arange(f.shape[1])
    below, above = monotone[bucket, columns], monotone[bucket + 1, columns]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(above > below, np.clip((p - below) / (above - below), 0.0, 1.0), 1.0)
    return bucket, share


def pointwise_quantile_interval(boundaries: np.ndarray, cdf: np.ndarray, variances: np.ndarray,
                                adjacent_covariances: np.ndarray, p: float, z: float,
                                one_sided: float | None = None,
                                pinned_at_estimate: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The hull of {v : |F(v) - p| <= z SE(v)} (module docstring), F linear within each bucket.

    ``cdf`` is F at the boundaries, (m,) or (m, draws) for many estimates at once; ``variances`` its variance
    there (m,) and ``adjacent_covariances`` Cov(F_j, F_j+1) (m-1,).  Within bucket j at share s of its width,
    g(s) = (F(s) - p)^2 - z^2 Var F(s) = A s^2 + 2 B s + C; its set g <= 0 in [0, 1] starts at 0 or at a root
    and ends at 1 or at a root.  No v (F never within z SE of p): the end of the range F is nearest to reaching
    p.  With ``one_sided`` (the one-sided critical value of the same confidence, z_value(1 - 2 (1 - confidence))):
    where the hull reaches the range's top and not its bottom, that end cannot miss, so the low end is the hull's
    at ``one_sided`` (all the miss on one side); the mirror case at the bottom.  With ``pinned_at_estimate`` also
    where F's interval at the point estimate, p +- z SE, passes 1 (or 0): a CDF cannot exceed 1, so that side's
    test cannot reject there though the hull stops short of the range's end (the top's SE is 0).  Returns
    (low, high), each of shape cdf.shape[1:]."""
    f = np.asarray(cdf, dtype=np.float64)
    f = f[:, None] if f.ndim == 1 else f
    boundaries = np.asarray(boundaries, dtype=np.float64)
    c00, c11 = np.asarray(variances)[:-1, None], np.asarray(variances)[1:, None]
    c01 = np.asarray(adjacent_covariances)[:, None]
    low, high, at_bottom, at_top = _hull(boundaries, f, c00, c11, c01, p, z)
    if pinned_at_estimate:  # the CDF's interval at the estimate passes 1 (or 0): that side's test cannot reject
        bucket, share = _estimate_position(f, p)
        variance = ((1 - share) ** 2 * c00[bucket, 0] + share ** 2 * c11[bucket, 0]
                    + 2 * share * (1 - share) * c01[bucket, 0])
        half = z * np.sqrt(np.clip(variance, 0.0, None))
        at_top, at_bottom = at_top | (p + half >= 1.0), at_bottom | (p - half <= 0.0)
    if one_sided is not None:
        one_low, one_high, _, _ = _hull(boundaries, f, c00, c11, c01, p, one_sided)
        low = np.where(at_top & ~at_bottom, one_low, low)
        high = np.where(at_bottom & ~at_top, one_high, high)
    shape = np.shape(cdf)[1:]
    return low.reshape(shape), high.reshape(shape)


def pointwise_quantile_set(boundaries: np.ndarray, cdf: np.ndarray, variances: np.ndarray,
                           adjacent_covariances: np.ndarray, p: float, z: float) -> list[tuple[float, float]]:
    """The set {v : |F(v) - p| <= z SE(v)} itself, as disjoint intervals (F linear within each bucket, as
    :func:`pointwise_quantile_interval`, whose hull it is).  It holds the true quantile t exactly when F(t)'s
    pointwise interval holds F(t) = p: coverage 1 - alpha, where its hull may hold more (several runs of values
    where F stays within z SE of p: flat tails, small n)"""
    f, v = np.asarray(cdf, dtype=np.float64), np.asarray(variances, dtype=np.float64)
    c01 = np.asarray(adjacent_covariances, dtype=np.float64)
    e, d = f[:-1] - p, np.diff(f)
    z2 = z * z
    a = d * d - z2 * (v[:-1] + v[1:] - 2 * c01)
    b = e * d + z2 * (v[:-1] - c01)
    c = e * e - z2 * v[:-1]
    first, last = _first_and_last_roots(a, b, c)
    pieces: list[tuple[float, float]] = []
    for j in range(len(d)):
        g0, g1 = c[j] <= 0, a[j] + 2 * b[j] + c[j] <= 0
        if g0 and g1:  # a convex g: all of [0, 1]; a concave one may dip above 0 between its roots
            shares = [(0.0, 1.0)] if a[j] >= 0 or np.isnan(first[j]) else [(0.0, first[j]), (last[j], 1.0)]
        elif g0:
            shares = [(0.0, first[j] if not np.isnan(first[j]) else 1.0)]
        elif g1:
            shares = [(last[j] if not np.isnan(last[j]) else 0.0, 1.0)]
        else:
            shares = [] if np.isnan(first[j]) else [(first[j], last[j])]
        width = boundaries[j + 1] - boundaries[j]
        for low, high in shares:
            low_value, high_value = boundaries[j] + low * width, boundaries[j] + high * width
            if pieces and pieces[-1][1] >= low_value:
                pieces[-1] = (pieces[-1][0], float(max(pieces[-1][1], high_value)))
            else:
                pieces.append((float(low_value), float(high_value)))
    return pieces


def quantile_rows(boundaries: np.ndarray, cdf: np.ndarray, covariance: np.ndarray, quantiles: tuple[float, ...],
                  z: float, band_critical: float, monotone: np.ndarray | None = None,
                  one_sided: float | None = None) -> list[QuantileRow]:
    """Each quantile's estimate and pointwise interval from the isotonic CDF ``monotone`` (by default
    ``isotonic_cdf(cdf)``) with its own variances (:func:`isotonic_variances`) at z, an end pinned at the range's
    edge taking the other at ``one_sided``, and its band-inverted interval from the linear ``cdf`` at
    ``band_critical``; each interval widened to hold the estimate"""
    monotone = isotonic_cdf(cdf, known_ends(covariance)) if monotone is None else monotone
    variances, adjacent = np.diag(covariance), np.diag(covariance, 1)
    monotone_variances, monotone_adjacent = isotonic_variances(cdf, covariance)
    rows = []
    for p in quantiles:
        estimate = invert_cdf(boundaries, monotone, p)
        ends = [pointwise_quantile_interval(boundaries, monotone, monotone_variances, monotone_adjacent, p, z,
                                            one_sided, pinned_at_estimate=True),
                pointwise_quantile_interval(boundaries, cdf, variances, adjacent, p, band_critical)]
        (low, high), (band_low, band_high) = [(min(float(lo), estimate), max(float(hi), estimate))
                                              for lo, hi in ends]
        pieces = tuple(pointwise_quantile_set(boundaries, cdf, variances, adjacent, p, z))
        rows.append(QuantileRow(p, estimate, low, high, band_low, band_high, pieces))
    return rows


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
    errors = cdf_noise_draws(level_noise_draws(covariance, band_draws, np.random.default_rng(BAND_SEED)),
                             precisions, params.branching, d)
    band_critical = band_critical_from_draws(errors, se, confidence)
    monotone = isotonic_cdf(cdf, known_ends(c))
    rows = quantile_rows(boundaries, cdf, c, quantiles, z, band_critical, monotone,
                         z_value(1 - 2 * (1 - confidence)))
    midpoints = np.zeros(params.leaves)
    midpoints[:d] = (boundaries[:-1] + boundaries[1:]) / 2
    mean = float(midpoints[:d] @ leaves[:d])
    mean_weights = adjoint(midpoints[:, None], precisions, params.branching)
    mean_se = float(np.sqrt(max(covariance.quadratic(mean_weights)[0, 0], 0.0)))
    return QuantilesEstimate(
        params=params, n=aggregate.n, confidence=confidence, level_estimates=raw, level_std_errors=raw_se,
        leaves=leaves, cdf=cdf, cdf_covariance=c, band_critical=band_critical,
        quantiles=rows, mean=Interval(mean, mean_se, mean - z * mean_se, mean + z * mean_se), monotone_cdf=monotone,
    )
