"""Coverage of the RAPPOR Bloom decoder's intervals by simulation (fixed seeds; ``rappor.interval_coverage``).

Each case decodes RUNS independent collections; a candidate's coverage is the share of runs whose interval holds
its true proportion.  Its Monte-Carlo standard error is the binomial sqrt(c (1 - c) / RUNS) at the nominal level,
and the tolerance is a Bonferroni k over every candidate checked (family-wise 1%).  The clipped ``pi +- z SE`` of
the constrained fit fails the sparse cases (present candidates covered 0.84 to 0.89)."""

import math
from statistics import NormalDist

import numpy as np
import pytest

from client_sdk.rappor import RapporParams
from estimators.rappor import interval_coverage

PARAMS = RapporParams(k=16, h=2, m=32, p=0.25, q=0.75, f=0.5)
VALUES = [f"v{i}" for i in range(30)]
SPARSE = [0.5, 0.3, 0.2, 0.002, 0.001] + [0.0] * 25  # three present, two near 0, 25 absent
DENSE = list(np.linspace(1, 3, 30))
CASES = [("sparse", SPARSE, 5_000), ("sparse", SPARSE, 200_000), ("dense", DENSE, 5_000)]
RUNS = 200
CONFIDENCE = 0.95
K = NormalDist().inv_cdf(1 - 0.01 / (len(CASES) * len(VALUES)))


@pytest.mark.parametrize("name, weights, n", CASES, ids=[f"{name}-{n}" for name, _, n in CASES])
def test_bloom_intervals_hold_their_level(name, weights, n):
    "Every candidate, present or absent, is covered at least at the stated level (within k Monte-Carlo SEs)"
    covered, methods = interval_coverage(PARAMS, VALUES, weights, n, RUNS, np.random.default_rng(n + len(name)))
    assert methods == {"unconstrained_wls"}
    floor = CONFIDENCE - K * math.sqrt(CONFIDENCE * (1 - CONFIDENCE) / RUNS)
    below = {v: c for v, c in zip(VALUES, covered) if c < floor}
    assert below == {}, f"coverage under {floor:.3f}: {below}"
