"""A found string's interval includes the residual collisions of the fixed public hash family
(``result.collision_variance``, measured on null keys from the same table): with 8 hash functions and 400 strings
of equal frequency, the collisions of the 390 strings the decoder does not correct for exceed the oracle's own
variance, and the intervals still cover at 0.95, where the oracle's variance alone covers about 0.80.  Each
repetition draws new strings, so new keys and new collisions: the repetitions are independent."""

import numpy as np

from client_sdk.kinds.heavy_hitters import encode_value, params_from_dict
from client_sdk.kinds.heavy_hitters.encoding import prefix_key
from client_sdk.kinds.heavy_hitters.planning import oracle
from estimators.kinds.heavy_hitters import simulate_aggregate
from estimators.kinds.heavy_hitters.pem import olh_estimates
from estimators.kinds.heavy_hitters.result import collision_variance, hitter, null_keys
from tests.tolerances import k_sigma

ALPHABET = "abcdefghijklmnopqrstuvwxyz."
SPEC = {"max_length": 4, "alphabet": ALPHABET, "algorithm": "pem", "segment_length": 1, "hash_count": 8}
DEVICES, STRINGS, TARGETS, REPETITIONS = 100_000, 400, 10, 60


def test_intervals_cover_when_the_family_s_collisions_dominate_and_the_oracle_s_variance_alone_does_not():
    params, rng = params_from_dict(SPEC, 3.0), np.random.default_rng(34)
    constants, group = oracle(params), params.estimation_group
    covered = {"with collisions": 0, "oracle only": 0}
    for _ in range(REPETITIONS):
        words: set[str] = set()
        while len(words) < STRINGS:
            words.add("".join(rng.choice(list(ALPHABET[:-1]), 4)))
        symbols = [encode_value(params, word) for word in sorted(words)]
        counts = rng.multinomial(DEVICES, np.full(STRINGS, 1 / STRINGS))
        aggregate = simulate_aggregate(params, symbols, counts, rng)
        reports = int(aggregate.counts[group])
        keys = [prefix_key(s) for s in symbols[:TARGETS]]  # the found strings, corrected for each other
        estimates = olh_estimates(aggregate.cells[group], reports, keys, constants, TARGETS, null_keys())
        residual = collision_variance(estimates[TARGETS:], constants, reports)
        for i in range(TARGETS):
            for label, extra in (("with collisions", residual), ("oracle only", 0.0)):
                entry = hitter(params, constants, symbols[i], float(estimates[i]), reports, DEVICES, 0.0, 0.95, extra)
                covered[label] += entry.ci_low <= counts[i] / DEVICES <= entry.ci_high
    total = REPETITIONS * TARGETS
    tolerance = k_sigma(2) * np.sqrt(0.95 * 0.05 / total)
    assert abs(covered["with collisions"] / total - 0.95) <= tolerance, covered
    assert covered["oracle only"] / total < 0.95 - tolerance, covered  # the test tells the two apart
