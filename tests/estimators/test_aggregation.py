import json

import numpy as np
import pytest

from client_sdk import PayloadError, load_spec
from estimators import Aggregate, AggregateMismatch, aggregate, estimate, estimate_aggregate, merge, parse_payloads
from estimators.bits import bit_counts
from estimators.mechanisms import REGISTRY, mechanism_for
from estimators.mechanisms.categorical import olh_support_counts
from estimators.simulate import simulate

ALL = ["grr", "sue", "oue", "olh", "hadamard", "laplace", "duchi", "piecewise", "hybrid"]


def spec_for(mechanism):
    if mechanism in ("laplace", "duchi", "piecewise", "hybrid"):
        return load_spec({"name": "t", "mechanism": mechanism, "epsilon": 1.0, "range": [0, 100]})
    return load_spec({"name": "t", "mechanism": mechanism, "epsilon": 1.0, "domain": list(range(11))})


def values_for(spec, n, rng):
    return rng.uniform(-10, 110, n) if spec.is_numeric else rng.integers(0, 11, n)


@pytest.mark.parametrize("mechanism", ALL)
def test_merge_of_parts_equals_aggregate_of_whole(mechanism):
    spec = spec_for(mechanism)
    rng = np.random.default_rng(30)
    payloads = simulate(spec, values_for(spec, 3001, rng), rng).to_payloads()
    whole = aggregate(spec, payloads)
    parts = [aggregate(spec, payloads[i:i + 700]) for i in range(0, len(payloads), 700)]
    merged = Aggregate.empty(spec)
    for part in reversed(parts):
        merged = merge(merged, part)
    assert merged == whole and merged.n == 3001
    restored = Aggregate.from_dict(json.loads(json.dumps(whole.to_dict())))
    assert restored == whole
    assert estimate_aggregate(spec, merged).to_dict() == estimate(spec, payloads).to_dict()  # not a call with itself


def test_merge_refuses_other_specs():
    a = Aggregate.empty(spec_for("grr"))
    b = Aggregate.empty(load_spec({"name": "t", "mechanism": "grr", "epsilon": 2.0, "domain": list(range(11))}))
    with pytest.raises(AggregateMismatch):
        a.merge(b)


def test_bit_counts_match_unpacking():
    packed = np.random.default_rng(31).integers(0, 256, size=(5000, 9), dtype=np.uint8)
    assert np.array_equal(bit_counts(packed, 70), np.unpackbits(packed, axis=1)[:, :70].sum(axis=0))


def test_olh_support_counts_match_the_python_hash():
    from client_sdk.mechanisms.hashing import olh_hash

    rng = np.random.default_rng(32)
    n, d, g = 300, 37, 5
    a = rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)
    b = rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)
    y = rng.integers(0, g, size=n)
    expected = [sum(olh_hash(int(a[i]), int(b[i]), v, g) == y[i] for i in range(n)) for v in range(d)]
    assert olh_support_counts(a, b, y, d, g).tolist() == expected


def test_numeric_sums_are_exact_python_integers():
    "Codes far beyond what the SDK sends (so built as a batch, past check_payload) still sum exactly"
    spec = spec_for("laplace")
    agg = aggregate(spec, parse_payloads(spec, [2**40, -(2**40), 3], checked=True))
    assert agg.counts.tolist() == [3, 2**81 + 9]
    # sums that would overflow int64 stay exact
    big = aggregate(spec, parse_payloads(spec, [2**61, 2**61, 2**61, 2**61], checked=True))
    assert big.counts.tolist() == [2**63, 4 * 2**122]


def test_grouped_bit_counts_match_unpacking_per_group():
    from estimators.bits import grouped_bit_counts

    rng = np.random.default_rng(12)
    packed = rng.integers(0, 256, size=(500, 3), dtype=np.uint8)
    groups = rng.integers(0, 4, size=500)
    bits = np.unpackbits(packed, axis=1)[:, :21]
    expected = np.stack([bits[groups == g].sum(axis=0) for g in range(4)])
    assert np.array_equal(grouped_bit_counts(groups, packed, 4, 21), expected)


def small_spec_for(mechanism):
    if mechanism == "rappor":
        return load_spec({"name": "t", "mechanism": "rappor",
                          "rappor": {"k": 13, "h": 2, "m": 4, "f": 0.5, "p": 0.5, "q": 0.75}})
    return spec_for(mechanism)


@pytest.mark.parametrize("mechanism", sorted(REGISTRY))
def test_the_python_statistic_of_small_batches_equals_numpy_s(mechanism):
    "Batches of 1..64: small_statistic (where a mechanism has one) gives statistic's values, dtype and shape"
    spec = small_spec_for(mechanism)
    server = mechanism_for(spec)
    rng = np.random.default_rng(16)
    compared = 0
    for size in range(1, 65):
        if mechanism == "rappor":
            values = [f"/page/{i}" for i in rng.integers(0, 8, size)]
        else:
            values = values_for(spec, size, rng)
        payloads = simulate(spec, values, rng).to_payloads()
        expected = server.statistic(parse_payloads(spec, payloads))
        small = server.small_statistic(payloads)
        if small is not None:
            compared += 1
            assert small.dtype == expected.dtype and small.shape == expected.shape
            assert [int(c) for c in small.reshape(-1)] == [int(c) for c in expected.reshape(-1)]
        through = aggregate(spec, payloads)  # the small path up to SMALL_BATCH reports, numpy's after
        assert through.n == size and through.counts.dtype == expected.dtype and np.array_equal(through.counts,
                                                                                             expected)
    assert compared in (0, 64)
    assert compared == 64 or mechanism in ("olh", "hadamard")


def test_a_bad_payload_in_a_small_batch_is_named_as_parse_names_it():
    spec = spec_for("oue")
    good = simulate(spec, np.array([1, 2]), np.random.default_rng(1)).to_payloads()
    with pytest.raises(PayloadError) as small:
        aggregate(spec, [good[0], "zz", good[1]])
    with pytest.raises(PayloadError) as parsed:
        parse_payloads(spec, [good[0], "zz", good[1]])
    assert small.value.field == parsed.value.field == "payloads[1]" and small.value.reason == parsed.value.reason
