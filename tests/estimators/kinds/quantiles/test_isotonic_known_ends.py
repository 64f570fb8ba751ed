"""The range's known ends (F = 0 at the bottom, 1 at the top: not estimates) in the isotonic CDF and the interval."""

import numpy as np
import pytest

from estimators.intervals import z_value
from estimators.kinds.quantiles import isotonic_cdf, pointwise_quantile_interval
from estimators.kinds.quantiles.estimate import isotonic_variances, known_ends


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


def test_a_hull_reaching_the_known_tops_bucket_takes_the_one_sided_low_end():
    """The top known (SE 0) is never in the set, so the hull stops inside the last bucket; reaching that bucket, its
    high end cannot miss, and the low end is the one-sided inversion.  Last bucket: F(s) = 0.9 + 0.1 s, SE(s) =
    0.02 (1 - s) (boundaries perfectly correlated), so 0.99 - F(s) = z SE(s) at s = (0.09 - 0.02 z) / (0.1 - 0.02 z)"""
    boundaries = np.arange(5.0)
    cdf = np.array([0.0, 0.3, 0.6, 0.9, 1.0])
    se = np.array([0.0, 0.02, 0.02, 0.02, 0.0])
    two, one = z_value(0.95), z_value(0.9)

    def share(z):
        return (0.09 - 0.02 * z) / (0.1 - 0.02 * z)

    low, high = pointwise_quantile_interval(boundaries, cdf, se * se, se[:-1] * se[1:], 0.99, two, one)
    assert float(low) == pytest.approx(3 + share(one), abs=1e-9)
    assert 3 + share(two) < float(low) < float(high) < boundaries[-1]
    low_two, _ = pointwise_quantile_interval(boundaries, cdf, se * se, se[:-1] * se[1:], 0.99, two)
    assert float(low_two) == pytest.approx(3 + share(two), abs=1e-9)
