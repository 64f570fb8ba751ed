"""HistogramWithCoins: coin bits proven to be bits, masked by the aggregators so that every coin is fair."""

from __future__ import annotations

import math
import os

import pytest

from client_sdk.vdaf import VerifyError, coin_mask_bits, masked_output_share, prio3_histogram_with_coins
from tests.tolerances import k_sigma

from .helpers import VERIFY_KEY, shard_bytes, verify

LENGTH, COINS, CHUNK = 4, 3, 4


def release(vdaf, reports, selected, key=VERIFY_KEY):
    "Both aggregators: verify, mask the selected reports' coins, sum per aggregator, combine"
    p = vdaf.field.MODULUS
    totals = [[0] * LENGTH for _ in range(vdaf.SHARES)]
    for index, (nonce, public, shares) in enumerate(reports):
        masks = coin_mask_bits(key, nonce, LENGTH * COINS)
        for agg_id, out_share in enumerate(verify(vdaf, nonce, public, shares)):
            contribution = masked_output_share(vdaf.field, out_share, length=LENGTH, coins=COINS, mask_bits=masks,
                                               selected=index in selected, num_shares=vdaf.SHARES)
            totals[agg_id] = [(a + b) % p for a, b in zip(totals[agg_id], contribution)]
    return [sum(column) % p for column in zip(*totals)]


@pytest.mark.parametrize("shares", [2, 3])
def test_round_trip_with_masked_coins(shares):
    "The release is the histogram plus, for the selected reports, the sum per bucket of coin XOR mask"
    vdaf = prio3_histogram_with_coins(LENGTH, COINS, CHUNK, shares=shares)
    measurements = [(1, [1, 0, 1] * LENGTH), (3, [0] * (LENGTH * COINS)), (1, [1] * (LENGTH * COINS))]
    reports = []
    for measurement in measurements:
        nonce = os.urandom(16)
        reports.append((nonce, *shard_bytes(vdaf, measurement, nonce)))
    selected = {0, 2}
    expected = [sum(1 for bucket, _ in measurements if bucket == b) for b in range(LENGTH)]
    for index in selected:
        masks = coin_mask_bits(VERIFY_KEY, reports[index][0], LENGTH * COINS)
        coins = measurements[index][1]
        for b in range(LENGTH):
            expected[b] += sum(coins[j] ^ masks[j] for j in range(b * COINS, (b + 1) * COINS))
    assert release(vdaf, reports, selected) == expected


def test_unselected_reports_add_only_their_histogram():
    vdaf = prio3_histogram_with_coins(LENGTH, COINS, CHUNK)
    nonce = os.urandom(16)
    reports = [(nonce, *shard_bytes(vdaf, 2, nonce))]  # coins from the CSPRNG
    assert release(vdaf, reports, selected=set()) == [0, 0, 1, 0]


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


def test_masks_make_a_cheating_device_fair():
    "All-ones coins from the device: the masked coins are still Bernoulli(1/2) over nonces"
    count, reports = 4_000, 0
    ones = 0
    for i in range(count // (LENGTH * COINS)):
        nonce = i.to_bytes(16, "big")
        masks = coin_mask_bits(VERIFY_KEY, nonce, LENGTH * COINS)
        ones += sum(1 ^ m for m in masks)
        reports += 1
    draws = reports * LENGTH * COINS
    assert abs(ones / draws - 0.5) < k_sigma() * math.sqrt(0.25 / draws)


def test_mask_bits_are_bound_to_the_key_and_nonce():
    a = coin_mask_bits(VERIFY_KEY, bytes(16), 256)
    assert a == coin_mask_bits(VERIFY_KEY, bytes(16), 256)
    assert a != coin_mask_bits(VERIFY_KEY, bytes(15) + b"\x01", 256)
    assert a != coin_mask_bits(bytes(32), bytes(16), 256)
    assert set(a) == {0, 1} and coin_mask_bits(VERIFY_KEY, bytes(16), 5) == a[:5]
