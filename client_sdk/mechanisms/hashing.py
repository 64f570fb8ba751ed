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


def olh_hash(a: int, b: int, x: int, g: int) -> int:
    "h_(a,b)(x) in [0, g)"
    return ((((a * x + b) & MASK64) >> 32) * g) >> 32


def seed_to_hex(a: int, b: int) -> str:
    return f"{a:016x}{b:016x}"


def seed_from_hex(text: str) -> tuple[int, int]:
    return int(text[:16], 16), int(text[16:], 16)
