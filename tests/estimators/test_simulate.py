"""The vectorised simulator produces exactly the SDK's output distribution (chi-square, small domains)."""

from collections import Counter

import numpy as np
import pytest
from scipy import stats

from client_sdk import DeterministicRandom, load_spec, mechanism_from_spec
from client_sdk.mechanisms.hashing import olh_hash, seed_from_hex
from client_sdk.mechanisms.numeric import GRID, PM_CELLS
from estimators.batch import parse_payloads
from estimators.simulate import simulate

DRAWS = 6000


def outcome(spec, payload):
    "A hashable summary: the payload itself, or a post-processing with a small outcome space"
    m = spec.mechanism
    if m == "laplace":
        return int(np.clip(np.floor(payload / GRID * 2), -6, 6))
    if m == "piecewise":
        return payload * 10 // (PM_CELLS + 1)
    if m == "hybrid":
        return (payload[0], payload[1] * 10 // (PM_CELLS + 1) if payload[0] else payload[1])
    return tuple(payload) if isinstance(payload, list) else payload


def same_distribution(spec, value, sim_value):
    sdk = mechanism_from_spec(spec, rng=DeterministicRandom(21))
    sdk_outcomes = Counter(outcome(spec, sdk.perturb(value)) for _ in range(DRAWS))
    batch = simulate(spec, np.full(DRAWS, sim_value), np.random.default_rng(22))
    sim_outcomes = Counter(outcome(spec, p) for p in batch.to_payloads())
    keys = sorted(set(sdk_outcomes) | set(sim_outcomes), key=repr)
    table = np.array([[sdk_outcomes[k] for k in keys], [sim_outcomes[k] for k in keys]])
    return stats.chi2_contingency(table).pvalue


@pytest.mark.parametrize("mechanism", ["grr", "sue", "oue", "hadamard"])
def test_categorical_simulator_matches_sdk(mechanism):
    spec = load_spec({"name": "t", "mechanism": mechanism, "epsilon": 1.0, "domain": ["a", "b", "c"]})
    for index, value in enumerate(spec.domain):
        assert same_distribution(spec, value, index) > 1e-4


def test_olh_simulator_matches_sdk():
    "OLH: compare the reported y and whether it supports each value (the seed is uniform in both)"
    spec = load_spec({"name": "t", "mechanism": "olh", "epsilon": 2.0, "domain": ["a", "b", "c"]})
    g = mechanism_from_spec(spec).g

    def summary(payload):
        a, b = seed_from_hex(payload[0])
        return (payload[1], tuple(olh_hash(a, b, v, g) == payload[1] for v in range(3)))

    sdk = mechanism_from_spec(spec, rng=DeterministicRandom(23))
    sdk_outcomes = Counter(summary(sdk.perturb("b")) for _ in range(DRAWS))
    simulated = simulate(spec, np.full(DRAWS, 1), np.random.default_rng(24)).to_payloads()
    sim_outcomes = Counter(summary(p) for p in simulated)
    keys = sorted(set(sdk_outcomes) | set(sim_outcomes))
    table = np.array([[sdk_outcomes[k] for k in keys], [sim_outcomes[k] for k in keys]])
    assert stats.chi2_contingency(table).pvalue > 1e-4


@pytest.mark.parametrize("mechanism", ["laplace", "duchi", "piecewise", "hybrid"])
@pytest.mark.parametrize("value", [0.0, 3.7, 10.0])
def test_numeric_simulator_matches_sdk(mechanism, value):
    spec = load_spec({"name": "t", "mechanism": mechanism, "epsilon": 1.0, "range": [0, 10]})
    assert same_distribution(spec, value, value) > 1e-4


@pytest.mark.parametrize("mechanism", ["grr", "sue", "oue", "olh", "hadamard"])
def test_payload_round_trip(mechanism):
    spec = load_spec({"name": "t", "mechanism": mechanism, "epsilon": 1.0, "domain": list(range(13))})
    batch = simulate(spec, np.arange(13).repeat(7), np.random.default_rng(25))
    payloads = batch.to_payloads()
    checker = mechanism_from_spec(spec)
    for payload in payloads:
        checker.check_payload(payload)
    again = parse_payloads(spec, payloads)
    for name, column in batch.columns.items():
        assert np.array_equal(again[name], column)


def test_simulator_rejects_values_outside_the_domain():
    spec = load_spec({"name": "t", "mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b"]})
    with pytest.raises(ValueError):
        simulate(spec, np.array([0, 2]), np.random.default_rng(0))
