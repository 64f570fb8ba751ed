"""The isotonic CDF's variances with the range's known ends (F = 0 at the bottom, 1 at the top: not estimates)."""

import numpy as np
import pytest

from estimators.kinds.quantiles import isotonic_cdf
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
