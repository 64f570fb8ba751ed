"""Prio3 end to end: honest reports sum correctly; tampered messages and every invalid measurement a malicious
client could shard itself are rejected at verification."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client_sdk.vdaf import (
    Prio3,
    VerifyError,
    prio3_count,
    prio3_histogram,
    prio3_multihot_count_vec,
    prio3_sum,
    prio3_sum_vec,
)

from .helpers import VERIFY_KEY, aggregate, shard_bytes, verify

SETTINGS = settings(derandomize=True, max_examples=8, deadline=None, database=None)
NONCES = st.binary(min_size=16, max_size=16)


@SETTINGS
@given(st.lists(st.integers(0, 1), min_size=1, max_size=4), st.sampled_from([2, 3]), NONCES)
def test_count_round_trip(measurements, shares, nonce):
    vdaf = prio3_count(shares)
    reports = [(nonce, *shard_bytes(vdaf, m, nonce)) for m in measurements]
    assert aggregate(vdaf, reports) == sum(measurements)


@SETTINGS
@given(st.integers(1, 1000).flatmap(lambda top: st.tuples(st.just(top), st.lists(st.integers(0, top), min_size=1,
                                                                                   max_size=3))), NONCES)
def test_sum_round_trip(params, nonce):
    top, measurements = params
    vdaf = prio3_sum(top)
    reports = [(nonce, *shard_bytes(vdaf, m, nonce)) for m in measurements]
    assert aggregate(vdaf, reports) == sum(measurements)


@SETTINGS
@given(st.integers(1, 6), st.integers(1, 7), st.integers(1, 5), st.data(), NONCES)
def test_sum_vec_round_trip(length, top, chunk, data, nonce):
    vdaf = prio3_sum_vec(length, top, chunk)
    measurements = data.draw(st.lists(st.lists(st.integers(0, top), min_size=length, max_size=length), min_size=1,
                                      max_size=3))
    reports = [(nonce, *shard_bytes(vdaf, m, nonce)) for m in measurements]
    assert aggregate(vdaf, reports) == [sum(column) for column in zip(*measurements)]


@SETTINGS
@given(st.integers(1, 20), st.integers(1, 6), st.data(), NONCES)
def test_histogram_round_trip(length, chunk, data, nonce):
    vdaf = prio3_histogram(length, chunk)
    buckets = data.draw(st.lists(st.integers(0, length - 1), min_size=1, max_size=3))
    reports = [(nonce, *shard_bytes(vdaf, b, nonce)) for b in buckets]
    assert aggregate(vdaf, reports) == [buckets.count(i) for i in range(length)]


@SETTINGS
@given(st.integers(1, 12), st.data(), NONCES)
def test_multihot_round_trip(length, data, nonce):
    max_weight = data.draw(st.integers(1, length))
    vdaf = prio3_multihot_count_vec(length, max_weight, data.draw(st.integers(1, 5)))
    vectors = data.draw(st.lists(st.lists(st.booleans(), min_size=length, max_size=length)
                                 .filter(lambda v: sum(v) <= max_weight), min_size=1, max_size=3))
    reports = [(nonce, *shard_bytes(vdaf, v, nonce)) for v in vectors]
    assert aggregate(vdaf, reports) == [sum(column) for column in zip(*vectors)]


def test_three_aggregators_histogram():
    vdaf = prio3_histogram(5, 2, shares=3)
    nonce = os.urandom(16)
    assert aggregate(vdaf, [(nonce, *shard_bytes(vdaf, 3, nonce))]) == [0, 0, 0, 1, 0]


# --- encode-time validation -------------------------------------------------------------------------------------


@pytest.mark.parametrize("vdaf,measurement", [
    (prio3_count(), 2), (prio3_count(), -1), (prio3_sum(255), 256), (prio3_sum(255), -1),
    (prio3_sum_vec(3, 7, 2), [1, 8, 0]), (prio3_sum_vec(3, 7, 2), [1, 2]), (prio3_histogram(4, 2), 4),
    (prio3_histogram(4, 2), -1), (prio3_multihot_count_vec(4, 2, 2), [True, True, True, False]),
])
def test_shard_refuses_an_invalid_measurement(vdaf, measurement):
    with pytest.raises(ValueError):
        vdaf.shard(b"", measurement, bytes(16))


# --- a malicious client shards an invalid encoding itself ------------------------------------------------------

P64 = prio3_count().field.MODULUS
P128 = prio3_histogram(2, 1).field.MODULUS

MALICIOUS = {
    "count of 2": (prio3_count(), [2]),
    "count of -1": (prio3_count(), [P64 - 1]),
    "sum above its bound": (prio3_sum(255), [256, 0, 0, 0, 0, 0, 0, 0]),
    "sum bit of 2": (prio3_sum(255), [0, 2, 0, 0, 0, 0, 0, 0]),
    "sum negative bit": (prio3_sum(10), [P64 - 1, 1, 1, 0]),
    "histogram with two ones": (prio3_histogram(8, 3), [1, 0, 0, 0, 0, 1, 0, 0]),
    "histogram with a 2": (prio3_histogram(8, 3), [0, 0, 2, 0, 0, 0, 0, 0]),
    "histogram all zeros": (prio3_histogram(8, 3), [0] * 8),
    "histogram 2 and -1": (prio3_histogram(8, 3), [2, P128 - 1, 0, 0, 0, 0, 0, 0]),
    "sum_vec entry out of range": (prio3_sum_vec(3, 7, 2), [1, 1, 1, 8, 0, 0, 0, 0, 0]),
    "sum_vec bit of 2": (prio3_sum_vec(3, 7, 2), [0, 0, 0, 0, 2, 0, 0, 0, 0]),
    "multihot over max_weight": (prio3_multihot_count_vec(4, 2, 2), [1, 1, 1, 0, 1, 1]),
    "multihot weight understated": (prio3_multihot_count_vec(4, 2, 2), [1, 1, 1, 0, 0, 1]),
    "multihot entry of 2": (prio3_multihot_count_vec(4, 2, 2), [2, 0, 0, 0, 0, 1]),
}


@pytest.mark.parametrize("name", sorted(MALICIOUS))
def test_invalid_encoded_measurement_is_rejected(name):
    vdaf, encoded = MALICIOUS[name]
    for _attempt in range(3):  # fresh randomness each time: rejection is not luck
        nonce = os.urandom(16)
        public, shares = shard_bytes(vdaf, None, nonce, encoded=encoded)
        with pytest.raises(VerifyError):
            verify(vdaf, nonce, public, shares)


def test_internal_shard_accepts_a_valid_encoding():
    "The malicious-client entry point itself works: a valid raw encoding verifies"
    vdaf = prio3_histogram(8, 3)
    nonce = os.urandom(16)
    public, shares = shard_bytes(vdaf, None, nonce, encoded=[0, 0, 0, 1, 0, 0, 0, 0])
    assert sum(o[3] for o in verify(vdaf, nonce, public, shares)) % P128 == 1


# --- tampering with messages ------------------------------------------------------------------------------------

VARIANTS = {
    "count": (prio3_count(), 1),
    "sum": (prio3_sum(255), 100),
    "sum_vec": (prio3_sum_vec(3, 7, 2), [1, 7, 0]),
    "histogram": (prio3_histogram(8, 3), 5),
    "multihot": (prio3_multihot_count_vec(4, 2, 2), [True, False, True, False]),
}


def _flipped(data: bytes, position: int) -> bytes:
    raw = bytearray(data)
    raw[position] ^= 0x01
    return bytes(raw)


FLIP_TARGETS = [
    (variant, target)
    for variant in sorted(VARIANTS)
    for target in ["leader meas", "leader proof", "helper seed", "blind", "public share"]
    # Count and Sum use no joint randomness: no blind, and an empty public share
    if variant not in ("count", "sum") or target not in ("blind", "public share")
]


@pytest.mark.parametrize("variant,target", FLIP_TARGETS)
def test_one_flipped_byte_is_rejected(variant, target):
    vdaf, measurement = VARIANTS[variant]
    nonce = os.urandom(16)
    public, shares = shard_bytes(vdaf, measurement, nonce)
    meas_bytes = vdaf.flp.MEAS_LEN * vdaf.field.ENCODED_SIZE
    if target == "leader meas":
        shares = [_flipped(shares[0], meas_bytes - 5), shares[1]]
    elif target == "leader proof":
        shares = [_flipped(shares[0], meas_bytes + 2), shares[1]]
    elif target == "helper seed":
        shares = [shares[0], _flipped(shares[1], 0)]
    elif target == "blind":
        shares = [shares[0], _flipped(shares[1], len(shares[1]) - 1)]
    else:
        public = _flipped(public, 0)
    with pytest.raises(VerifyError):
        verify(vdaf, nonce, public, shares)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_truncated_share_is_rejected(variant):
    vdaf, measurement = VARIANTS[variant]
    nonce = os.urandom(16)
    public, shares = shard_bytes(vdaf, measurement, nonce)
    for broken in ([shares[0][:-1], shares[1]], [shares[0], shares[1][:-1]]):
        with pytest.raises(VerifyError):
            verify(vdaf, nonce, public, broken)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_wrong_nonce_or_verify_key_is_rejected(variant):
    vdaf, measurement = VARIANTS[variant]
    nonce = os.urandom(16)
    public, shares = shard_bytes(vdaf, measurement, nonce)
    assert verify(vdaf, nonce, public, shares)
    other_nonce = _flipped(nonce, 15)
    with pytest.raises(VerifyError):
        verify(vdaf, nonce, public, shares, nonces=[nonce, other_nonce])
    with pytest.raises(VerifyError):
        verify(vdaf, nonce, public, shares, keys=[VERIFY_KEY, _flipped(VERIFY_KEY, 0)])


def test_the_client_picks_the_nonce_and_the_aggregators_must_agree():
    "Both aggregators using the same wrong nonce: with joint randomness the joint-rand parts no longer match"
    vdaf, measurement = VARIANTS["histogram"]
    nonce = os.urandom(16)
    public, shares = shard_bytes(vdaf, measurement, nonce)
    with pytest.raises(VerifyError):
        verify(vdaf, nonce, public, shares, nonces=[_flipped(nonce, 0)] * 2)


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="shares"):
        prio3_count(shares=1)
    with pytest.raises(ValueError, match="max_measurement"):
        prio3_sum(0)
    with pytest.raises(ValueError, match="chunk_length"):
        prio3_histogram(4, 0)
    with pytest.raises(ValueError, match="max_weight"):
        prio3_multihot_count_vec(4, 5, 2)
    with pytest.raises(ValueError, match="nonce"):
        prio3_count().shard(b"", 1, bytes(15))
    assert isinstance(prio3_count(), Prio3)
