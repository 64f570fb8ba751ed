"""A quantile interval pinned at the range's edge: that end cannot miss, so the other end takes the one-sided value.

The CDF is constructed so the set {v : |F(v) - p| <= z SE} has a closed form: SE constant and boundaries perfectly
correlated make Var F(v) = SE^2 inside every bucket, so the set's ends are F^-1(p -+ z SE) exactly."""

import numpy as np
import pytest

from estimators.intervals import z_value
from estimators.kinds.quantiles import invert_cdf, pointwise_quantile_interval

BOUNDARIES = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
CDF = np.array([0.0, 0.3, 0.6, 0.9, 1.0])
SE = 0.02
TWO_SIDED, ONE_SIDED = z_value(0.95), z_value(1 - 2 * (1 - 0.95))


def interval(p, se=SE, one_sided=ONE_SIDED):
    variances = np.full(len(CDF), se * se)
    low, high = pointwise_quantile_interval(BOUNDARIES, CDF, variances, variances[1:], p, TWO_SIDED, one_sided)
    return float(low), float(high)


def test_the_one_sided_value_is_1645_at_95_percent():
    assert ONE_SIDED == pytest.approx(1.6449, abs=1e-4)


def test_pinned_at_the_top_the_low_end_is_the_one_sided_inversion():
    low, high = interval(0.99)
    assert high == BOUNDARIES[-1]
    assert low == pytest.approx(invert_cdf(BOUNDARIES, CDF, 0.99 - ONE_SIDED * SE), abs=1e-12)
    two_low, two_high = interval(0.99, one_sided=None)
    assert two_high == BOUNDARIES[-1]
    assert two_low == pytest.approx(invert_cdf(BOUNDARIES, CDF, 0.99 - TWO_SIDED * SE), abs=1e-12)
    assert two_low < low


def test_pinned_at_the_bottom_the_high_end_is_the_one_sided_inversion():
    low, high = interval(0.01)
    assert low == BOUNDARIES[0]
    assert high == pytest.approx(invert_cdf(BOUNDARIES, CDF, 0.01 + ONE_SIDED * SE), abs=1e-12)


def test_unpinned_and_doubly_pinned_intervals_keep_the_two_sided_value():
    low, high = interval(0.5)
    assert (low, high) == pytest.approx((invert_cdf(BOUNDARIES, CDF, 0.5 - TWO_SIDED * SE),
                                         invert_cdf(BOUNDARIES, CDF, 0.5 + TWO_SIDED * SE)), abs=1e-12)
    assert interval(0.5) == interval(0.5, one_sided=None)
    assert interval(0.5, se=0.5) == (BOUNDARIES[0], BOUNDARIES[-1]) == interval(0.5, se=0.5, one_sided=None)


def test_many_columns_at_once_match_one_at_a_time():
    shifted = np.stack([CDF, np.clip(CDF + 0.05 * (CDF > 0), 0, 1)], axis=1)
    variances = np.full(len(CDF), SE * SE)
    low, high = pointwise_quantile_interval(BOUNDARIES, shifted, variances, variances[1:], 0.99, TWO_SIDED,
                                            ONE_SIDED)
    for column in range(2):
        one = pointwise_quantile_interval(BOUNDARIES, shifted[:, column], variances, variances[1:], 0.99,
                                          TWO_SIDED, ONE_SIDED)
        assert (low[column], high[column]) == (float(one[0]), float(one[1]))
