"""HistogramWithCoins: coin bits proven to be bits (the circuit of coins campaigns' devices, kept for compatibility;
the aggregators verify the coins and sum the histogram part only)."""

from __future__ import annotations

import os

import pytest

from client_sdk.vdaf import VerifyError, prio3_histogram_with_coins

from .helpers import shard_bytes, verify

LENGTH, COINS, CHUNK = 4, 3, 4


@pytest.mark.parametrize("shares", [2, 3])
def test_round_trip_verifies_every_coin_and_sums_the_histogram(shares):
    "The output keeps every coin; its first ``LENGTH`` entries (what the aggregators sum) are the histogram"
    vdaf = prio3_histogram_with_coins(LENGTH, COINS, CHUNK, shares=shares)
    measurements = [(1, [1, 0, 1] * LENGTH), (3, [0] * (LENGTH * COINS)), (1, [1] * (LENGTH * COINS))]
    p = vdaf.field.MODULUS
    total = [0] * (LENGTH * (1 + COINS))
    for measurement in measurements:
        nonce = os.urandom(16)
        for out_share in verify(vdaf, nonce, *shard_bytes(vdaf, measurement, nonce)):
            total = [(a + b) % p for a, b in zip(total, out_share)]
    assert total[:LENGTH] == [0, 2, 0, 1]
    assert total[LENGTH:] == [sum(m[1][j] for m in measurements) for j in range(LENGTH * COINS)]


@pytest.mark.parametrize("name,encoded", [
    ("coin bit of 2", [0, 1, 0, 0] + [0, 2] + [0] * 10),
    ("coin of -1", [0, 1, 0, 0] + [0] * 11 + [-1]),
    ("two ones", [1, 1, 0, 0] + [0] * 12),
    ("no bucket, the one moved to a coin", [0, 0, 0, 0] + [1] + [0] * 11),
])
def test_invalid_coins_are_rejected(name, encoded):
    vdaf = prio3_histogram_with_coins(LENGTH, COINS, CHUNK)
    encoded = [x % vdaf.field.MODULUS for x in encoded]
    for _attempt in range(3):
        nonce = os.urandom(16)
        public, shares = shard_bytes(vdaf, None, nonce, encoded=encoded)
        with pytest.raises(VerifyError):
            verify(vdaf, nonce, public, shares)


@pytest.mark.parametrize("measurement", [4, -1, (1, [0, 1]), (1, [2] * 12), True])
def test_the_device_refuses_a_bad_measurement(measurement):
    with pytest.raises(ValueError):
        prio3_histogram_with_coins(LENGTH, COINS, CHUNK).shard(b"", measurement, bytes(16))
