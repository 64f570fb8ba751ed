"""Coin-flip noise on secret shares: the aggregators' mask bits and the XOR of each coin with its mask.

A device of a coin-flip campaign sends, with its histogram, ``coins`` bits per bucket (``HistogramWithCoins``,
proven to be bits).  A device that chose its bits could bias the noise, so after verification each aggregator XORs
every coin with a mask bit that the device could not know when it uploaded: the bits of
TurboSHAKE128(verify key, "ldp-telemetry coin mask", nonce).  The verify key is shared by the aggregators only and
the nonce is the report's, so the masks are the same at both aggregators, fresh per report, and independent of
anything the device sees.  A masked coin b XOR r is fair whatever b was, unless the device colludes with an
aggregator (which knows the verify key).

XOR with a public bit is affine, so it runs on additive shares: b XOR r = r + (1 - 2r) b.  Aggregator j of s
adds (1 - 2r) b_j + r/s (the constant split across the shares, as inside the validity circuits); the shares of the
masked coin add up to b XOR r.  Only the reports that public randomness selects for the release
(``estimators.distributed.select_coin_reports``) contribute their masked coins; every valid report contributes its
histogram.
"""

from __future__ import annotations

from .field import Field
from .xof import XofTurboShake128

COIN_MASK_DST = b"ldp-telemetry coin mask"


def coin_mask_bits(verify_key: bytes, nonce: bytes, count: int) -> list[int]:
    "The ``count`` mask bits of one report: TurboSHAKE128 over the verify key, bound to the report's nonce"
    if count < 0:
        raise ValueError("count must be non-negative")
    stream = XofTurboShake128(verify_key, COIN_MASK_DST, nonce).next((count + 7) // 8)
    return [(stream[i // 8] >> (i % 8)) & 1 for i in range(count)]


def masked_output_share(field: type[Field], out_share: list[int], *, length: int, coins: int, mask_bits: list[int],
                        selected: bool, num_shares: int = 2) -> list[int]:
    """One aggregator's contribution of one report to its aggregate share (``length`` values): the histogram share,
    plus, when the report is selected for the noise, the share of the sum of its masked coins per bucket"""
    if len(out_share) != length * (1 + coins):
        raise ValueError(f"an output share of HistogramWithCoins({length}, {coins}) has {length * (1 + coins)} entries")
    if len(mask_bits) != length * coins:
        raise ValueError(f"{length * coins} mask bits are needed")
    p = field.MODULUS
    histogram = [x % p for x in out_share[:length]]
    if not selected:
        return histogram
    share_of_one = pow(num_shares, -1, p)
    coin_shares = out_share[length:]
    for bucket in range(length):
        total = 0
        for j in range(bucket * coins, (bucket + 1) * coins):
            r = mask_bits[j]
            total += (1 - 2 * r) * coin_shares[j] + r * share_of_one
        histogram[bucket] = (histogram[bucket] + total) % p
    return histogram
