"""The quantiles kind's device side: buckets, clamps, payloads and the per-report privacy audit."""

import math

import pytest

from client_sdk.errors import InvalidValue, PayloadError
from client_sdk.kinds.quantiles import (
    CLAMPED,
    QuantilesReport,
    bucket_of,
    check_payload,
    level_oracle,
    make_report,
    node_of,
    parse_params,
)
from client_sdk.mechanisms.hashing import olh_hash, seed_from_hex
from client_sdk.randomness import DeterministicRandom
from tests.audit import audit, exact_violations, python_parameters

PARAMS = parse_params({"range": [0, 100], "buckets": 64, "branching": 4}, 1.0)


def test_buckets_and_nodes():
    assert [bucket_of(PARAMS, v) for v in (0.0, 1.5624, 1.5625, 99.99, 100.0)] == [0, 0, 1, 63, 63]
    geometric = parse_params({"range": [1, 1000], "bucketing": "geometric", "growth": 2}, 1.0)
    assert [bucket_of(geometric, v) for v in (1.0, 1.99, 2.0, 600.0, 1000.0)] == [0, 0, 1, 9, 9]
    assert [node_of(PARAMS, 63, level) for level in (1, 2, 3)] == [3, 15, 63]


def test_clamped_values_are_counted_on_the_device_not_in_the_report():
    rng, state = DeterministicRandom(1), {}
    inside = make_report(rng, PARAMS, 50.0, state)
    outside = make_report(rng, PARAMS, 1e300, state)
    make_report(rng, PARAMS, -math.inf, state)
    assert state == {CLAMPED: 2}
    assert len(inside) == len(outside) == 2  # the same shape: nothing says "clamped"
    with pytest.raises(InvalidValue):
        make_report(rng, PARAMS, math.nan)
    with pytest.raises(TypeError):
        make_report(rng, PARAMS, True)


@pytest.mark.parametrize("oracle", ["olh", "hadamard"])
def test_reports_round_trip_and_are_checked(oracle):
    params = parse_params({"range": [0, 100], "buckets": 64, "oracle": oracle}, 1.0)
    rng = DeterministicRandom(2)
    for value in (0, 33.3, 99):
        payload = make_report(rng, params, value)
        check_payload(params, payload)
        assert QuantilesReport.decode(params, payload).encode() == payload
    bad = [([1], "payload"), ([0, payload[1]], "payload[0]"), ([params.height + 1, payload[1]], "payload[0]"),
           ([1, "x"], "payload[1]"), ("x", "payload")]
    for case, field in bad:
        with pytest.raises(PayloadError) as caught:
            check_payload(params, case)
        assert caught.value.field == field


def test_the_level_is_uniform_on_the_device():
    rng = DeterministicRandom(3)
    counts = [0] * PARAMS.height
    n = 6000
    for _ in range(n):
        counts[make_report(rng, PARAMS, 10.0)[0] - 1] += 1
    for count in counts:  # binomial(n, 1/h), 5 SE
        assert abs(count - n / PARAMS.height) < 5 * math.sqrt(n / PARAMS.height)


def test_every_level_oracle_is_exactly_epsilon_ldp():
    for oracle in ("olh", "hadamard"):
        for epsilon in (0.5, 1.0, math.log(3), 4.0):
            params = parse_params({"range": [0, 1], "buckets": 64, "oracle": oracle}, epsilon)
            for level in range(1, params.height + 1):
                randomizer = level_oracle(params, level)
                assert exact_violations(oracle, python_parameters(randomizer), epsilon) == []


def binned(params, payload, a, b):
    "A function of the report only: its level, and whether the hash puts each tested value's node on y"
    level, inner = payload
    if params.oracle == "hadamard":
        return (level, *inner)
    seed, y = inner
    key_a, key_b = seed_from_hex(seed)
    g = level_oracle(params, level).g
    return (level, olh_hash(key_a, key_b, node_of(params, a, level), g) == y,
            olh_hash(key_a, key_b, node_of(params, b, level), g) == y)


@pytest.mark.parametrize("oracle", ["olh", "hadamard"])
def test_empirical_audit_of_the_whole_report(oracle):
    "Reports of three values (same or different nodes per level) stay within e^eps; a campaign at 3 eps fails it"
    epsilon, n = 1.0, 4000
    values = {"low": 0.5, "next": 20.0, "high": 99.0}  # buckets 0, 12, 63

    def samples(params, audited_epsilon):
        rng = DeterministicRandom(11)
        buckets = {name: bucket_of(params, v) for name, v in values.items()}
        out = {name: [binned(params, make_report(rng, params, v), buckets["low"], buckets["high"])
                      for _ in range(n)] for name, v in values.items()}
        return audit(out, audited_epsilon)

    params = parse_params({"range": [0, 100], "buckets": 64, "branching": 4, "oracle": oracle}, epsilon)
    assert samples(params, epsilon) == []
    leaky = parse_params({"range": [0, 100], "buckets": 64, "branching": 4, "oracle": oracle}, 3 * epsilon)
    assert samples(leaky, epsilon) != []
