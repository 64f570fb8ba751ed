"""heavy_hitters reports: the documented byte consumption order, the payload codec, and privacy audits."""

import hashlib
import math

import pytest

from client_sdk.errors import PayloadError
from client_sdk.kinds.heavy_hitters import (
    cell_count,
    encode_value,
    group_key,
    make_report,
    params_from_dict,
    parse_payload,
    report_cell,
)
from client_sdk.kinds.heavy_hitters.encoding import olh_seed
from client_sdk.kinds.heavy_hitters.oracles import OlhConstants, SketchConstants
from client_sdk.mechanisms.hashing import olh_hash
from client_sdk.randomness import ByteStreamRandom, DeterministicRandom
from tests.audit import LN_K_EPSILONS, audit, exact_violations

PEM = {"max_length": 2, "alphabet": "ab", "algorithm": "pem", "segment_length": 1}
SFP = {"max_length": 2, "alphabet": "ab", "algorithm": "sfp", "fragment_length": 1, "sketch_width": 16,
       "sketch_depth": 2}


class Reader:
    "An independent reading of the documented order: randbelow(n) takes bit_length(n) bits of whole bytes"

    def __init__(self, data):
        self.data, self.at = data, 0

    def bits(self, k):
        size = (k + 7) // 8
        value = int.from_bytes(self.data[self.at:self.at + size], "big") >> (8 * size - k)
        self.at += size
        return value

    def below(self, n):
        while (value := self.bits(n.bit_length())) >= n:
            pass
        return value


@pytest.mark.parametrize("seed", range(5))
def test_pem_reports_consume_the_bytes_in_the_documented_order(seed):
    params = params_from_dict({**PEM, "max_length": 6, "alphabet": "abcdefghijklmnopqrstuvwxyz."}, 3.0)
    data = hashlib.sha256(bytes([seed])).digest() * 8
    payload = make_report(ByteStreamRandom(data), params, "hello")
    read, olh = Reader(data), OlhConstants(3.0)
    group, index = read.below(params.groups), read.below(params.hash_count)
    a, b = (int.from_bytes(hashlib.sha256(b"ldp-telemetry/heavy_hitters/olh\x00" + index.to_bytes(4, "big")).digest()
                           [at:at + 8], "big") for at in (0, 8))
    hashed = olh_hash(a, b, group_key(params, encode_value(params, "hello"), group), olh.g)
    if read.below(olh.keep.denominator) < olh.keep.numerator:
        y = hashed
    else:
        other = read.below(olh.g - 1)
        y = other if other < hashed else other + 1
    assert payload == (group * params.hash_count + index) * olh.g + y  # the report's cell, most significant first
    assert parse_payload(params, payload)._values() == (group, index, y)


@pytest.mark.parametrize("seed", range(5))
def test_sfp_reports_consume_the_bytes_in_the_documented_order(seed):
    params = params_from_dict({**SFP, "max_length": 6, "sketch_width": 1024, "sketch_depth": 16}, 3.0)
    data = hashlib.sha256(bytes([seed])).digest() * 4
    payload = make_report(ByteStreamRandom(data), params, "abba")
    read = Reader(data)
    group, row, column = read.below(params.groups), read.below(16), read.below(1024)
    keep = SketchConstants(3.0, 1024, 16).keep
    kept = read.below(keep.denominator) < keep.numerator
    from client_sdk.kinds.heavy_hitters.encoding import sketch_seeds

    seed_a, seed_b = sketch_seeds(16)[row]
    h = olh_hash(seed_a, seed_b, group_key(params, encode_value(params, "abba"), group), 1024)
    bit = (bin(h & column).count("1") & 1) ^ (not kept)
    assert payload == ((group * 16 + row) * 1024 + column) * 2 + bit
    assert parse_payload(params, payload)._values() == (group, row, column, bit)


@pytest.mark.parametrize(("spec", "payload", "field"), [
    (PEM, [0, 0], "payload"),
    (PEM, [3, 0, 0], "payload[0]"),
    (PEM, [0, "00" * 16, 0], "payload[1]"),
    (PEM, [0, -1, 0], "payload[1]"),
    (PEM, [0, 4096 // 21, 0], "payload[1]"),
    (PEM, [0, True, 0], "payload[1]"),
    (PEM, [0, 0, 1000], "payload[2]"),
    (PEM, [0, 0, True], "payload[2]"),
    (SFP, [0, 0, 0], "payload"),
    (SFP, [3, 0, 0, 0], "payload[0]"),
    (SFP, [0, 2, 0, 0], "payload[1]"),
    (SFP, [0, 0, 16, 0], "payload[2]"),
    (SFP, [0, 0, 0, 2], "payload[3]"),
    (SFP, "0,0,0,0", "payload"),
    (PEM, -1, "payload"),
    (PEM, 3 * (4096 // 21) * 21, "payload"),  # one past the last cell: groups * hash_count * g
    (PEM, True, "payload"),
    (PEM, 1.0, "payload"),
    (PEM, None, "payload"),
    (SFP, 3 * 2 * 16 * 2, "payload"),
    (SFP, 1 << 70, "payload"),
    (SFP, "7", "payload"),
])
def test_bad_payloads_raise_a_payload_error_naming_the_field(spec, payload, field):
    with pytest.raises(PayloadError) as caught:
        parse_payload(params_from_dict(spec, 3.0), payload)
    assert caught.value.field == field


@pytest.mark.parametrize("spec", [PEM, SFP])
def test_payloads_round_trip_through_the_codec(spec):
    params, rng = params_from_dict(spec, 2.0), DeterministicRandom(7)
    for value in ("", "a", "ab", "ba"):
        payload = make_report(rng, params, value)
        assert type(payload) is int and report_cell(params, parse_payload(params, payload)) == payload
    for cell in range(cell_count(params)):  # every cell is one report, and the older list form reads the same
        report = parse_payload(params, cell)
        assert report_cell(params, report) == cell and parse_payload(params, list(report._values())) == report


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0, 8.0] + LN_K_EPSILONS[::9])
def test_exact_audit_both_oracles_stay_within_e_eps(epsilon):
    olh, sketch = OlhConstants(epsilon), SketchConstants(epsilon, 1024, 16)
    assert exact_violations("olh", {"keep": olh.keep, "g": olh.g}, epsilon) == []
    assert exact_violations("hadamard", {"keep": sketch.keep}, epsilon) == []


VALUES = ("", "ab", "ba", "bb")


def pem_samples(params, epsilon_audited, draws):
    "Outputs binned by (group, which of the audited values' keys the reported y supports): post-processing"
    rng = DeterministicRandom(11)
    g = OlhConstants(params.epsilon).g
    samples = {}
    for value in VALUES:
        binned = []
        for _ in range(draws):
            group, index, y = parse_payload(params, make_report(rng, params, value))._values()
            a, b = olh_seed(index)
            keys = [group_key(params, encode_value(params, v), group) for v in VALUES]
            binned.append((group, tuple(olh_hash(a, b, key, g) == y for key in keys)))
        samples[value] = binned
    return samples


def sfp_samples(params, draws):
    rng = DeterministicRandom(12)
    return {value: [make_report(rng, params, value) for _ in range(draws)] for value in VALUES}


def test_empirical_audit_of_both_randomizers_passes_at_epsilon_and_detects_a_planted_leak():
    epsilon = 1.0
    assert audit(pem_samples(params_from_dict(PEM, epsilon), epsilon, 6000), epsilon) == []
    assert audit(sfp_samples(params_from_dict(SFP, epsilon), 6000), epsilon) == []
    # the same randomizers at 2 eps, audited at eps: a leak the audit must see
    assert audit(pem_samples(params_from_dict(PEM, 2 * epsilon), epsilon, 6000), epsilon) != []
    assert audit(sfp_samples(params_from_dict(SFP, 2 * epsilon), 6000), epsilon) != []


def pem_output_probabilities(params, value):
    """P(payload = [group, hash, y] | value) over PEM's whole output space, from the device's own functions: the
    group and the hash are uniform and independent of the value, y is the kept hash or one of the g - 1 others"""
    olh = OlhConstants(params.epsilon)
    symbols = encode_value(params, value)
    out = {}
    for group in range(params.groups):
        key = group_key(params, symbols, group)
        for index in range(params.hash_count):
            hashed = olh_hash(*olh_seed(index), key, olh.g)
            for y in range(olh.g):
                chance = olh.keep if y == hashed else (1 - olh.keep) / (olh.g - 1)
                out[(group, index, y)] = chance / (params.groups * params.hash_count)
    return out


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_exact_audit_of_pem_reports_over_the_whole_output_space_and_a_planted_leak(epsilon):
    spec = {**PEM, "hash_count": 8}
    honest = [pem_output_probabilities(params_from_dict(spec, epsilon), value) for value in VALUES]
    assert all(abs(sum(p.values()) - 1) < 1e-12 for p in honest)
    worst = max(max(p[o] for p in honest) / min(p[o] for p in honest) for o in honest[0])
    assert worst <= math.exp(epsilon) * (1 + 1e-12)
    leaky = [pem_output_probabilities(params_from_dict(spec, 2 * epsilon), value) for value in VALUES]
    assert max(max(p[o] for p in leaky) / min(p[o] for p in leaky) for o in leaky[0]) > math.exp(epsilon)
