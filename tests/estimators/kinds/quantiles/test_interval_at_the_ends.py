"""The reported quantile interval: the one-sided end where the CDF's interval at the estimate passes 1 (or 0), and
the isotonic CDF's variances with the range's known ends.

Boundaries perfectly correlated (Cov(F_j, F_j+1) = SE_j SE_j+1) make Var F(v) = SE^2 inside a bucket whose two
boundaries share SE, so the set's ends there are F^-1(p -+ z SE) exactly."""

import numpy as np
import pytest

from estimators.intervals import z_value
from estimators.kinds.quantiles import invert_cdf, isotonic_cdf, pointwise_quantile_interval
from estimators.kinds.quantiles.estimate import isotonic_variances, known_ends

TWO_SIDED, ONE_SIDED = z_value(0.95), z_value(1 - 2 * (1 - 0.95))


def interval(boundaries, cdf, se, p, pinned_at_estimate):
    se = np.asarray(se, dtype=np.float64)
    low, high = pointwise_quantile_interval(boundaries, np.asarray(cdf), se * se, se[:-1] * se[1:], p, TWO_SIDED,
                                            ONE_SIDED, pinned_at_estimate=pinned_at_estimate)
    return float(low), float(high)


def test_where_the_cdfs_interval_at_the_estimate_passes_1_the_low_end_is_one_sided():
    "p + z SE > 1 at the estimate, while the set stops short of the top (SE 0 there): the high end cannot miss"
    boundaries = np.arange(6.0)
    cdf = [0.0, 0.3, 0.6, 0.9, 0.995, 1.0]
    se = [0.0, 0.02, 0.02, 0.02, 0.02, 0.0]
    p = 0.99
    low, high = interval(boundaries, cdf, se, p, pinned_at_estimate=True)
    assert high < boundaries[-1]  # the set's own end, not the range's top
    assert low == pytest.approx(invert_cdf(boundaries, np.array(cdf), p - ONE_SIDED * 0.02), abs=1e-12)
    hull_low, _ = interval(boundaries, cdf, se, p, pinned_at_estimate=False)
    assert hull_low == pytest.approx(invert_cdf(boundaries, np.array(cdf), p - TWO_SIDED * 0.02), abs=1e-12)
    assert hull_low < low


def test_many_columns_at_once_match_one_at_a_time():
    boundaries = np.arange(7.0)
    base = np.array([0.0, 0.2, 0.4, 0.6, 0.75, 0.9, 1.0])
    columns = np.stack([base, np.clip(base + 0.04 * (base > 0) * (base < 1), 0, 1), base ** 0.5], axis=1)
    se = np.array([0.0, 0.02, 0.03, 0.02, 0.05, 0.25, 0.0])
    for p in (0.05, 0.5, 0.99):
        low, high = pointwise_quantile_interval(boundaries, columns, se * se, se[:-1] * se[1:], p, TWO_SIDED,
                                                ONE_SIDED, pinned_at_estimate=True)
        for column in range(columns.shape[1]):
            assert (low[column], high[column]) == interval(boundaries, columns[:, column], se, p, True)


def test_an_estimate_above_1_is_not_pooled_with_the_known_top():
    """F-hat = 1.01 just below the top (F = 1 exactly, variance 0): pooled with it, its variance would be a quarter
    of its own; the known top is a block of its own, so the boundary keeps its variance, and G is the same"""
    cdf = np.array([0.0, 0.5, 1.01, 1.0])
    v = 0.0004
    covariance = np.diag([0.0, v, v, 0.0])
    covariance[1, 2] = covariance[2, 1] = 0.5 * v
    assert known_ends(covariance) == (True, True)
    variances, adjacent = isotonic_variances(cdf, covariance)
    assert variances == pytest.approx([0.0, v, v, 0.0])
    assert adjacent == pytest.approx([0.0, 0.5 * v, 0.0])
    assert np.array_equal(isotonic_cdf(cdf, (True, True)), isotonic_cdf(cdf))
    assert np.array_equal(isotonic_cdf(cdf), [0.0, 0.5, 1.0, 1.0])
    padded = covariance.copy()
    padded[3, 3] = v  # a padded tree estimates F at the top: not known, pooled as any boundary
    assert known_ends(padded) == (True, False)
    assert isotonic_variances(cdf, padded)[0][2] == pytest.approx((v + v) / 4)
