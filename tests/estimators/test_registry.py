"""One entry per mechanism on each side of the device boundary, and one validation path for payloads."""

import warnings

import numpy as np
import pytest

from client_sdk import DeterministicRandom, PayloadError, load_spec, mechanism_from_spec
from client_sdk.errors import PrivacyWarning
from client_sdk.mechanisms import MECHANISM_CLASSES
from client_sdk.mechanisms.hashing import OLH_MAX_RANGE, olh_hash
from client_sdk.spec import MAX_EPSILON, MECHANISMS
from estimators import aggregate, estimate, estimate_aggregate, parse_payloads
from estimators.mechanisms import REGISTRY, mechanism_for
from estimators.mechanisms.categorical import olh_hash_many, olh_support_counts
from estimators.registry import _BY_ID
from estimators.simulate import simulate
from tests.tolerances import k_sigma

GRR = {"name": "g", "mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b", "c"]}
DUCHI = {"name": "m", "mechanism": "duchi", "epsilon": 1.0, "range": [0, 10]}
OLH = {"name": "o", "mechanism": "olh", "epsilon": 1.0, "domain": ["a", "b", "c"]}


def test_every_spec_mechanism_has_one_device_and_one_server_entry():
    assert set(MECHANISM_CLASSES) == set(MECHANISMS) == set(REGISTRY)


@pytest.mark.parametrize("payloads, field", [
    ([0, 1, 7], "payloads[2]"),  # out of the domain: used to give a fourth to eighth estimate
    ([0, 2.7], "payloads[1]"),  # used to be truncated to 2
    ([0, True], "payloads[1]"),
])
def test_estimate_rejects_payloads_the_collector_rejects(payloads, field):
    with pytest.raises(PayloadError) as error:
        estimate(GRR, payloads)
    assert error.value.field == field


def test_estimate_rejects_a_duchi_code_of_five():
    with pytest.raises(PayloadError, match=r"payloads\[0\]"):
        estimate(DUCHI, [5, 0, 1])


@pytest.mark.parametrize("seed", [" " * 32, "0" * 30 + " a", "0" * 16 + "\n" + "0" * 15, "g" * 32])
def test_olh_seeds_must_be_exactly_hex_digits(seed):
    "bytes.fromhex skips whitespace, so the check is a full match on hex digits (collector and estimators)"
    with pytest.raises(PayloadError) as error:
        mechanism_for(OLH).check_payload([seed, 0])
    assert error.value.field == "payload[0]"
    with pytest.raises(PayloadError) as error:
        aggregate(OLH, [["0" * 32, 1], [seed, 0]])
    assert error.value.field == "payloads[1][0]"


def test_aggregate_takes_the_same_spec_forms_as_estimate():
    payloads = [0, 1, 2, 2]
    assert aggregate(GRR, payloads) == aggregate(load_spec(GRR), payloads)
    assert estimate(GRR, payloads).to_dict() == estimate_aggregate(GRR, aggregate(GRR, payloads)).to_dict()


def test_numpy_numbers_are_numbers():
    spec = load_spec(DUCHI)
    device = mechanism_from_spec(spec, rng=DeterministicRandom(1))
    for value in (np.int64(3), np.float32(2.5), np.float64(2.5), np.int32(10)):
        assert device.perturb(value) in (0, 1)
    for value in (True, np.bool_(True), "3", float("nan")):
        with pytest.raises(TypeError):
            device.perturb(value)
    assert aggregate(spec, [np.int64(1), 0]) == aggregate(spec, [1, 0])
    with pytest.raises(PayloadError):
        aggregate(spec, [np.bool_(True)])


def test_numpy_integers_are_domain_integers():
    spec = load_spec({"name": "i", "mechanism": "grr", "epsilon": 1.0, "domain": [10, 20, "20", 30]})
    assert [spec.index_of(v) for v in (np.int64(20), np.int32(10), 20, "20", np.bool_(True), True)] == \
        [1, 0, 1, 2, None, None]
    assert mechanism_from_spec(spec, rng=DeterministicRandom(2)).perturb(np.int64(30)) in range(4)


def olh_spec(epsilon):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        return load_spec({"name": "o", "mechanism": "olh", "epsilon": epsilon, "domain": ["a", "b", "c", "d"]})


@pytest.mark.parametrize("epsilon", [15.0, MAX_EPSILON])
def test_olh_is_unbiased_at_high_epsilon(epsilon):
    "uint64 arithmetic overflowed from epsilon ~22.2 (g > 2**32) and gave 0.11 for a true 0.25; specs stop at 20"
    spec = olh_spec(epsilon)
    assert mechanism_for(spec).device.g <= OLH_MAX_RANGE
    rng = np.random.default_rng(5)
    n = 4000
    result = estimate(spec, simulate(spec, np.arange(n) % 4, rng))
    assert np.all(np.abs(result.estimates - 0.25) <= k_sigma(4) * result.std_errors)


@pytest.mark.parametrize("g", [2, 5, 1 << 20, OLH_MAX_RANGE])
def test_the_server_hash_is_the_sdk_hash(g):
    rng = np.random.default_rng(g)
    seeds = rng.integers(0, np.iinfo(np.uint64).max, size=(300, 2), dtype=np.uint64, endpoint=True)
    a, b = seeds[:, 0].copy(), seeds[:, 1].copy()
    for x in (0, 1, 7, 2**32 - 1):
        expected = [olh_hash(int(ai), int(bi), x, g) for ai, bi in zip(a, b)]
        assert olh_hash_many(a, b, np.full(300, x), g).tolist() == expected
    y = np.array(expected, dtype=np.int64)  # every report supports x = 2**32 - 1 at least
    d = 9
    supports = [sum(olh_hash(int(ai), int(bi), v, g) == yi for ai, bi, yi in zip(a, b, y)) for v in range(d)]
    assert olh_support_counts(a, b, y, d, g).tolist() == supports


def test_parse_without_checking_is_for_checked_payloads_only():
    spec = load_spec(GRR)
    assert parse_payloads(spec, [0, 2], checked=True).to_payloads() == [0, 2]
    with pytest.raises(PayloadError):
        parse_payloads(spec, [0, 3])


def test_a_served_basic_rappor_spec_needs_no_candidates_or_secret():
    spec = load_spec({"name": "b", "mechanism": "rappor", "rappor": {"k": 4, "h": 1, "m": 1, "encoding": "basic"}})
    assert set(spec.to_dict()["derived"]) == {"p11", "p01", "epsilon_one", "epsilon_inf"}


def test_mechanism_for_finds_a_spec_seen_before_without_hashing_it(monkeypatch):
    "A spec's hash covers its whole domain: the collector's per-report lookup must not pay it each time"
    spec = load_spec({**GRR, "name": "identity_cache"})
    first = mechanism_for(spec)
    calls = []
    original = type(spec).__hash__
    monkeypatch.setattr(type(spec), "__hash__", lambda self: calls.append(1) or original(self))
    assert mechanism_for(spec) is first
    assert calls == []
    equal = load_spec({**GRR, "name": "identity_cache"})  # an equal spec, another object: the same mechanism
    assert equal is not spec and mechanism_for(equal) is first
    assert all(held is mechanism.spec for held, mechanism in _BY_ID.values())  # no equal copy kept alive
