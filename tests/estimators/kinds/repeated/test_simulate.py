"""The simulation's bucket samples: d distinct buckets, uniform over the k-choose-d subsets, for any d <= k."""

import collections
import math

import numpy as np
import pytest
from scipy import stats

from estimators.kinds.repeated import sample_buckets


@pytest.mark.parametrize("k, d", [(6, 3), (70, 2), (100, 99)])
def test_sample_buckets_is_uniform_over_subsets_for_any_d(k, d):
    "Chi-square over all k-choose-d subsets (k = 100, d = 99: rejection sampling with replacement never ended)"
    rng, n = np.random.default_rng(35), 60_000
    rows = sample_buckets(k, d, n, rng)
    assert rows.shape == (n, d) and (np.diff(rows, axis=1) > 0).all() and rows.min() >= 0 and rows.max() < k
    counts = collections.Counter(map(tuple, rows))
    observed = list(counts.values()) + [0] * (math.comb(k, d) - len(counts))
    assert stats.chisquare(observed).pvalue > 1e-4
