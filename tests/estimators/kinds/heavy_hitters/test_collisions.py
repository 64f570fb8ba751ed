"""A found string's interval includes the residual collisions of the fixed public hash family
(``result.collision_variance``, measured on null keys from the same table): with 8 hash functions and 400 strings
of equal frequency, the collisions of the 390 strings the decoder does not correct for exceed the oracle's own
variance, and the intervals still cover at 0.95, where the oracle's variance alone covers about 0.80.  Each
repetition draws new strings, so new keys and new collisions: the repetitions are independent."""

import numpy as np

from client_sdk.kinds.heavy_hitters import encode_value, params_from_dict
from client_sdk.kinds.heavy_hitters.encoding import prefix_key, sketch_seeds
from client_sdk.kinds.heavy_hitters.planning import oracle
from estimators.kinds.heavy_hitters import simulate_aggregate
from estimators.kinds.heavy_hitters.pem import olh_estimates
from estimators.kinds.heavy_hitters.result import collision_variance, hitter, null_keys, sketch_corrected
from estimators.kinds.heavy_hitters.sfp import sketch_estimates, transformed
from estimators.kinds.heavy_hitters.simulate import olh_hash_array
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


SFP_SPEC = {"max_length": 4, "alphabet": ALPHABET, "algorithm": "sfp", "sketch_width": 16, "sketch_depth": 4}
HEAVY, HEAVY_MASS = 10, 0.8


def test_sfp_corrects_the_found_strings_collisions_with_each_other_and_its_intervals_stay_narrow_and_cover():
    """SFP with a 16 x 4 sketch: 10 strings hold 80% (0.08 each), 390 others the rest.  Uncorrected, a heavy string's
    collisions with the other heavy ones are several times the oracle's SE, and null keys (which collide with all
    10) would widen every interval by as much; corrected jointly (``sketch_corrected``), the errors are the
    oracle's, the null keys see only the light strings, and the intervals cover at 0.95 with the oracle's width"""
    params, rng = params_from_dict(SFP_SPEC, 3.0), np.random.default_rng(35)
    constants, group = oracle(params), params.estimation_group
    seeds = np.array(sketch_seeds(params.sketch_depth), dtype=np.uint64)
    covered, squares, widths, oracle_variances, uncorrected = 0, [], [], [], []
    for _ in range(REPETITIONS):
        words: set[str] = set()
        while len(words) < STRINGS:
            words.add("".join(rng.choice(list(ALPHABET[:-1]), 4)))
        symbols = [encode_value(params, word) for word in sorted(words)]
        shares = np.concatenate([np.full(HEAVY, HEAVY_MASS / HEAVY),
                                 np.full(STRINGS - HEAVY, (1 - HEAVY_MASS) / (STRINGS - HEAVY))])
        counts = rng.multinomial(DEVICES, shares)
        aggregate = simulate_aggregate(params, symbols, counts, rng)
        reports = int(aggregate.counts[group])
        query = np.concatenate([np.array([prefix_key(s) for s in symbols[:HEAVY]], np.uint64), null_keys()])
        raw = sketch_estimates(transformed(aggregate.cells[group]), reports, query, constants)
        columns = olh_hash_array(seeds[:, :1], seeds[:, 1:], query[None, :], params.sketch_width)
        estimates = sketch_corrected(raw, columns, HEAVY, params.sketch_width)
        residual = collision_variance(estimates[HEAVY:], constants, reports)
        for i in range(HEAVY):
            truth = counts[i] / DEVICES
            entry = hitter(params, constants, symbols[i], float(estimates[i]), reports, DEVICES, 0.0, 0.95, residual)
            covered += entry.ci_low <= truth <= entry.ci_high
            squares.append(((estimates[i] - truth) / entry.standard_error) ** 2)
            widths.append(entry.standard_error**2)
            oracle_variances.append(constants.variance(truth, reports, DEVICES))
            uncorrected.append((raw[i] - truth) ** 2)
    total = REPETITIONS * HEAVY
    assert np.mean(uncorrected) > 4 * np.mean(oracle_variances)  # the heavy strings' collisions dominate
    assert abs(covered / total - 0.95) <= k_sigma(3) * np.sqrt(0.95 * 0.05 / total), covered
    assert abs(np.mean(squares) - 1) <= k_sigma(3) * np.sqrt(2 / total), np.mean(squares)  # normal: Var z^2 = 2
    assert np.mean(widths) <= 1.2 * np.mean(oracle_variances), (np.mean(widths), np.mean(oracle_variances))
