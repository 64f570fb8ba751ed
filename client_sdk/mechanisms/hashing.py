"""The OLH hash family: Dietzfelbinger's multiply-add-shift, then a multiply into [0, g).

``h_seed(x) = (((a*x + b) mod 2**64) >> 32) * g >> 32`` with ``seed = (a, b)`` two uniform 64-bit integers and
``x < 2**32``.  Multiply-add-shift is strongly universal (Dietzfelbinger, STACS 1996): for x != x' the pair of
32-bit values is uniform, so collisions in [0, g) happen with probability 1/g up to g/2**32.  It needs only
integer multiply, add and shift, which numpy evaluates for a million reports times a thousand values in about a
second (``estimators.aggregation``).
"""

from __future__ import annotations

MASK64 = (1 << 64) - 1
SEED_HEX_CHARS = 32  # a and b, 16 hex characters each, big-endian
# g is round(e^eps + 1) (Wang et al. 2017) but at most 2**31, reached from eps ~21.5: the 32-bit hash value
# times g, and (y + 1) * 2**32 in the server's support test, then stay below 2**63, so numpy's uint64
# arithmetic cannot overflow.  With g = 2**31 a collision has probability 2**-31: the variance is unchanged in
# float64 terms.
OLH_MAX_RANGE = 1 << 31


def olh_range(e_eps: float) -> int:
    "g for e^eps: round(e^eps + 1), at least 2 and at most OLH_MAX_RANGE"
    return max(2, round(min(e_eps + 1, OLH_MAX_RANGE)))


def olh_hash(a: int, b: int, x: int, g: int) -> int:
    "h_(a,b)(x) in [0, g)"
    return ((((a * x + b) & MASK64) >> 32) * g) >> 32


def seed_to_hex(a: int, b: int) -> str:
    return f"{a:016x}{b:016x}"


def seed_from_hex(text: str) -> tuple[int, int]:
    return int(text[:16], 16), int(text[16:], 16)
