"""heavy_hitters estimates by simulation: found above the detection threshold, unbiased frequencies with the
formula's variance, interval coverage, false discoveries as expected, and a run through the real device."""

import numpy as np
import pytest

from client_sdk.kinds.heavy_hitters import encode_value, make_report, params_from_dict
from client_sdk.kinds.heavy_hitters.encoding import prefix_key, sketch_seeds
from client_sdk.kinds.heavy_hitters.planning import oracle
from client_sdk.randomness import DeterministicRandom
from estimators.kinds.heavy_hitters import (
    PemAggregate,
    aggregate_json,
    empty_aggregate,
    estimate_heavy_hitters,
    simulate_aggregate,
)
from estimators.kinds.heavy_hitters.pem import olh_estimates
from estimators.kinds.heavy_hitters.result import hitter
from estimators.kinds.heavy_hitters.sfp import sketch_estimates, transformed
from estimators.kinds.heavy_hitters.simulate import group_keys, olh_hash_array
from tests.tolerances import k_sigma, variance_tolerance

ALPHABET = "abcdefghijklmnopqrstuvwxyz."
PEM = {"max_length": 4, "alphabet": ALPHABET, "algorithm": "pem", "segment_length": 1}
SFP = {"max_length": 4, "alphabet": ALPHABET, "algorithm": "sfp", "fragment_length": 1}


def population(params, planted, frequency, devices, rng, distinct=300):
    """Planted strings (first letters a-d) at ``frequency`` each and ``distinct`` random background strings (first
    letters e-z or '.') sharing the rest evenly: a planted string's prefixes have exactly its frequency"""
    background = ["".join([rng.choice(list(ALPHABET[4:]))] + list(rng.choice(list(ALPHABET), 3)))
                  for _ in range(distinct)]
    background = sorted(set(background) - set(planted))
    each = round(frequency * devices)
    rest = devices - len(planted) * each
    counts = np.array([each] * len(planted) + [rest // len(background)] * len(background))
    counts[len(planted):len(planted) + rest % len(background)] += 1
    symbols = [encode_value(params, word) for word in list(planted) + background]
    return symbols, counts, group_keys(params, symbols)


@pytest.mark.parametrize("spec", [PEM, SFP])
def test_strings_at_the_detection_threshold_are_found_with_probability_at_least_0_9(spec):
    params, devices, rng = params_from_dict(spec, 3.0), 6000, np.random.default_rng(5)
    planted = ["abcd", "bcda", "cdab", "dabc"]
    symbols, counts, keys = population(params, planted, 0.2, devices, rng)
    threshold = estimate_heavy_hitters(params, simulate_aggregate(params, symbols, counts, rng,
                                                                  keys)).detection_threshold
    found, trials = {1.0: 0, 0.5: 0}, 30
    for scale in found:
        symbols, counts, keys = population(params, planted, threshold * scale, devices, rng)
        for _ in range(trials):
            estimate = estimate_heavy_hitters(params, simulate_aggregate(params, symbols, counts, rng, keys))
            found[scale] += sum(h.value in planted for h in estimate.hitters)
    n = trials * len(planted)
    k = k_sigma(2)
    assert found[1.0] / n >= 0.9 - k * np.sqrt(0.09 / n)
    assert found[0.5] / n < 0.9 - k * np.sqrt(0.09 / n)  # the threshold is not a loose bound


def estimation_group_estimates(params, aggregate, strings):
    "The estimation group's estimates of ``strings`` (pem: corrected for their collisions with each other)"
    group, reports, keys = params.estimation_group, int(aggregate.counts[params.estimation_group]), [
        prefix_key(symbols) for symbols in strings]
    if params.algorithm == "pem":
        return olh_estimates(aggregate.cells[group], reports, keys, oracle(params), len(keys))
    return sketch_estimates(transformed(aggregate.cells[group]), reports, np.array(keys, np.uint64), oracle(params))


def expected_sketch_estimate(params, strings, counts, target):
    "E[f^] given the fixed public hashes: the collisions of other strings in each row count (hash-averaged: 0)"
    m, seeds = params.sketch_width, np.array(sketch_seeds(params.sketch_depth), np.uint64)
    keys = np.array([prefix_key(s) for s in strings], np.uint64)
    columns = olh_hash_array(seeds[:, :1], seeds[:, 1:], keys[None, :], m)  # depth x strings
    collide = (columns == columns[:, [target]]).mean(axis=0)
    share = counts / counts.sum()
    return float(((share * collide).sum() - 1 / m) * m / (m - 1))


@pytest.mark.parametrize("spec", [PEM, SFP])
def test_estimation_group_frequencies_are_unbiased_with_the_formulas_variance_and_intervals_cover(spec):
    params, devices, rng = params_from_dict(spec, 2.0), 4000, np.random.default_rng(8)
    symbols, counts, keys = population(params, ["abcd", "bcda"], 0.15, devices, rng)
    truth = counts[:2] / devices
    repetitions, estimates, covered = 200, [], 0
    for _ in range(repetitions):
        aggregate = simulate_aggregate(params, symbols, counts, rng, keys)
        reports = int(np.asarray(aggregate.counts)[params.estimation_group])
        row = []
        for i, f in enumerate(estimation_group_estimates(params, aggregate, symbols[:2])):
            entry = hitter(params, oracle(params), symbols[i], f, reports, devices, 0.0, 0.95)
            covered += entry.ci_low <= truth[i] <= entry.ci_high
            row.append(float(f))
        estimates.append(row)
    values = np.array(estimates)
    expected = truth if params.algorithm == "pem" else np.array(
        [expected_sketch_estimate(params, symbols, counts, i) for i in range(2)])
    variance = oracle(params).variance(truth[0], devices // params.groups, devices)
    k = k_sigma(6)
    assert np.all(np.abs(values.mean(axis=0) - expected) <= k * np.sqrt(variance / repetitions))
    assert np.all(np.abs(values.var(axis=0, ddof=1) - variance) <= variance_tolerance(variance, repetitions, 6))
    total = 2 * repetitions
    assert abs(covered / total - 0.95) <= k * np.sqrt(0.95 * 0.05 / total)


def test_pem_false_discoveries_match_the_expectation():
    params, devices, rng = params_from_dict(PEM, 3.0), 20_000, np.random.default_rng(9)
    symbols, counts, keys = population(params, ["abcd", "bcda"], 0.2, devices, rng)
    truth = set(symbols)
    false, expected = 0, 0.0
    for _ in range(15):
        estimate = estimate_heavy_hitters(params, simulate_aggregate(params, symbols, counts, rng, keys), top_k=1000,
                                          budget=2.0)
        false += sum(h.symbols not in truth for h in estimate.hitters)
        nulls = sum(c not in truth for c in estimate.tested)
        expected += nulls * estimate.expected_false_discoveries / len(estimate.tested)
        assert estimate.expected_false_discoveries == pytest.approx(2.0)
    assert abs(false - expected) <= k_sigma(1) * np.sqrt(expected)


@pytest.mark.parametrize("spec", [PEM, SFP])
def test_the_real_device_function_finds_a_planted_string_through_validated_mergeable_aggregates(spec):
    params, rng = params_from_dict(spec, 3.0), DeterministicRandom(21)
    values = ["hey."] * 1800 + ["yo"] * 1200 + [a + b for a in ALPHABET[:-1] for b in ALPHABET] * 5
    payloads = [make_report(rng, params, value) for value in values[:6000]]
    first = empty_aggregate(params).add(payloads[:3000])
    second = empty_aggregate(params).add(payloads[3000:])
    merged = aggregate_json(params, first.merge(second).to_json())
    estimate = estimate_heavy_hitters(params, merged)
    found = {h.value: h for h in estimate.hitters}
    assert {"hey.", "yo"} <= set(found)
    for value, truth in (("hey.", 0.3), ("yo", 0.2)):
        assert found[value].ci_low - 0.05 <= truth <= found[value].ci_high + 0.05
    assert estimate.to_json()["interval_source"].startswith("estimation group")
    assert isinstance(merged, type(first)) and merged.counts.sum() == 6000
    if isinstance(merged, PemAggregate):  # a report is one count of its group's table
        assert list(merged.cells.sum(axis=(1, 2))) == list(merged.counts)
        assert merged.cells.shape == (params.groups, params.hash_count, oracle(params).g)
