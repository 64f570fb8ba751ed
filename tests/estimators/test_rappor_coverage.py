"""Coverage of the RAPPOR Bloom decoder's intervals by simulation (fixed seeds).

Each case decodes RUNS independent collections; a candidate's coverage is the share of runs whose interval holds
its true proportion.  Its Monte-Carlo standard error is the binomial sqrt(c (1 - c) / RUNS) at the nominal level,
and the tolerance is a Bonferroni k over every candidate checked (family-wise 1%)."""

import math
from statistics import NormalDist

import numpy as np
import pytest

from client_sdk.rappor import RapporParams
from estimators.rappor import CandidateMap, decode_rappor, position_table, simulate_rappor_counts

PARAMS = RapporParams(k=16, h=2, m=32, p=0.25, q=0.75, f=0.5)
VALUES = [f"v{i}" for i in range(30)]
SPARSE = [0.5, 0.3, 0.2, 0.002, 0.001] + [0.0] * 25  # three present, two near 0, 25 absent
DENSE = list(np.linspace(1, 3, 30))
CASES = [("sparse", SPARSE, 5_000), ("sparse", SPARSE, 200_000), ("dense", DENSE, 5_000)]
RUNS = 200
CONFIDENCE = 0.95
CHECKS = len(CASES) * len(VALUES)
K = NormalDist().inv_cdf(1 - 0.01 / CHECKS)


def coverage(weights, n, seed):
    truth = np.asarray(weights) / sum(weights)
    candidate_map = CandidateMap.from_candidates(PARAMS, VALUES)
    table = position_table(PARAMS, VALUES, VALUES)
    rng = np.random.default_rng(seed)
    hits = np.zeros(len(VALUES))
    for _ in range(RUNS):
        counts = simulate_rappor_counts(PARAMS, VALUES, truth, n, rng, VALUES, table)
        # resampling changes the standard errors, not the intervals; the small n needs the frequency limit off
        result = decode_rappor(PARAMS, counts, candidate_map, resamples=0, max_detection_frequency=1.0)
        assert result.status == "ok" and result.to_dict()["interval_method"] == "unconstrained_wls"
        by_string = {e.string: e for e in result.estimates}
        hits += [by_string[v].ci_low <= t <= by_string[v].ci_high for v, t in zip(VALUES, truth)]
    return hits / RUNS


@pytest.mark.parametrize("name, weights, n", CASES, ids=[f"{name}-{n}" for name, _, n in CASES])
def test_bloom_intervals_hold_their_level(name, weights, n):
    "Every candidate, present or absent, is covered at least at the stated level (within k Monte-Carlo SEs)"
    covered = coverage(weights, n, seed=n + len(name))
    floor = CONFIDENCE - K * math.sqrt(CONFIDENCE * (1 - CONFIDENCE) / RUNS)
    below = {v: c for v, c in zip(VALUES, covered) if c < floor}
    assert below == {}, f"coverage under {floor:.3f}: {below}"
