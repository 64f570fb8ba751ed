"""Frequency oracles (T. Wang, Blocki, Li, Jha, USENIX Security 2017): GRR, SUE, OUE, OLH, Hadamard response.

Wire formats (``perturb`` returns them, ``check_payload`` accepts exactly them):

=========  =========================================================================================
grr        an integer in [0, d): the reported domain index
sue, oue   a hex string of ``2*ceil(d/8)`` characters: bit i (most significant first) is value i;
           padding bits are 0
olh        ``[seed, y]``: seed a 32-character hex string (two 64-bit integers, see ``hashing``),
           y an integer in [0, g), g = min(round(e+1), 2**31)
hadamard   ``[j, b]``: j a column of the D x D Sylvester Hadamard matrix (D the next power of two
           >= d), b a bit (0 for +1, 1 for -1)
=========  =========================================================================================

Each payload has the same shape and size whatever the true value.  Probabilities are quantized to multiples of
2**-32 in the direction that keeps the privacy ratio at or below e**eps, from the exact rational of e**eps rounded
down (``exp_rounded``); p* and q* are the quantized values.
"""

from __future__ import annotations

from fractions import Fraction

from ..randomness import (
    PROB_DENOMINATOR,
    RandomSource,
    bernoulli,
    bernoulli_many,
    exp_rounded,
    quantize_down,
    quantize_up,
)
from ..spec import Spec
from ..wire import bits_to_hex, require_hex, require_int, require_list, require_packed_bits
from .base import CategoricalMechanism
from .hashing import SEED_HEX_CHARS, olh_hash, olh_range, seed_to_hex

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any


def hadamard_size(d: int) -> int:
    "D: the smallest power of two >= d"
    return 1 << max(0, (d - 1).bit_length())


def hadamard_sign_bit(row: int, column: int) -> int:
    "0 where H[row, column] = +1, 1 where it is -1 (Sylvester: the parity of row & column)"
    return bin(row & column).count("1") & 1


class GRR(CategoricalMechanism):
    "k-ary randomized response: keep the value w.p. e/(e+d-1), else report a uniform other value"

    names = ("grr",)

    def __init__(self, spec: Spec, *, rng: RandomSource | None = None) -> None:
        super().__init__(spec, rng=rng)
        e = Fraction(exp_rounded(spec.epsilon))
        self.keep = quantize_down(e / (e + self.d - 1))
        self.p_star = float(self.keep)
        self.q_star = float((1 - self.keep) / (self.d - 1))

    def perturb_index(self, index: int) -> int:
        if bernoulli(self.rng, self.keep):
            return index
        other = self.rng.randbelow(self.d - 1)
        return other if other < index else other + 1

    def check_payload(self, payload: Any) -> None:
        require_int(payload, "payload", 0, self.d)


class UnaryEncoding(CategoricalMechanism):
    "One bit per domain value; the true value's bit is 1 w.p. p*, every other bit w.p. q*"

    true_bit_one: Fraction
    other_bit_one: Fraction

    def perturb_index(self, index: int) -> str:
        threshold = self.other_bit_one.numerator * (PROB_DENOMINATOR // self.other_bit_one.denominator)
        bits = bytearray(bernoulli_many(self.rng, threshold, self.d))
        bits[index] = bernoulli(self.rng, self.true_bit_one)
        return bits_to_hex(bits, self.d)

    def check_payload(self, payload: Any) -> None:
        require_packed_bits(payload, "payload", self.d)


class SUE(UnaryEncoding):
    "Symmetric unary encoding (basic one-time RAPPOR): every bit kept w.p. e^(eps/2)/(e^(eps/2)+1)"

    names = ("sue",)

    def __init__(self, spec: Spec, *, rng: RandomSource | None = None) -> None:
        super().__init__(spec, rng=rng)
        half = Fraction(exp_rounded(spec.epsilon / 2))
        self.other_bit_one = quantize_up(1 / (half + 1))
        self.true_bit_one = 1 - self.other_bit_one
        self.p_star = float(self.true_bit_one)
        self.q_star = float(self.other_bit_one)


class OUE(UnaryEncoding):
    "Optimized unary encoding: the true bit is 1 w.p. 1/2, every other bit w.p. 1/(e+1)"

    names = ("oue",)

    def __init__(self, spec: Spec, *, rng: RandomSource | None = None) -> None:
        super().__init__(spec, rng=rng)
        self.true_bit_one = Fraction(1, 2)
        self.other_bit_one = quantize_up(1 / (Fraction(exp_rounded(spec.epsilon)) + 1))
        self.p_star = 0.5
        self.q_star = float(self.other_bit_one)


class OLH(CategoricalMechanism):
    "Optimized local hashing: a fresh random hash into [g], g = round(e+1) at most 2**31, then GRR on [g]"

    names = ("olh",)

    def __init__(self, spec: Spec, *, rng: RandomSource | None = None) -> None:
        super().__init__(spec, rng=rng)
        e = exp_rounded(spec.epsilon)
        self.g = olh_range(e)
        self.keep = quantize_down(Fraction(e) / (Fraction(e) + self.g - 1))
        self.p_star = float(self.keep)
        self.q_star = 1 / self.g

    def perturb_index(self, index: int) -> list:
        a, b = self.rng.randbits(64), self.rng.randbits(64)
        hashed = olh_hash(a, b, index, self.g)
        if bernoulli(self.rng, self.keep):
            y = hashed
        else:
            other = self.rng.randbelow(self.g - 1)
            y = other if other < hashed else other + 1
        return [seed_to_hex(a, b), y]

    def check_payload(self, payload: Any) -> None:
        seed, y = require_list(payload, "payload", 2)
        require_hex(seed, "payload[0]", SEED_HEX_CHARS)
        require_int(y, "payload[1]", 0, self.g)

    def derived(self) -> dict:
        return {**super().derived(), "g": self.g}


class Hadamard(CategoricalMechanism):
    "1-bit Hadamard response: a uniform column j, the sign H[x, j] flipped w.p. 1/(e+1)"

    names = ("hadamard",)

    def __init__(self, spec: Spec, *, rng: RandomSource | None = None) -> None:
        super().__init__(spec, rng=rng)
        self.size = hadamard_size(self.d)
        e = Fraction(exp_rounded(spec.epsilon))
        self.keep = quantize_down(e / (e + 1))
        self.p_star = float(self.keep)
        self.q_star = 0.5  # rows of a Hadamard matrix agree on exactly half of the columns

    def perturb_index(self, index: int) -> list:
        column = self.rng.randbelow(self.size)
        bit = hadamard_sign_bit(index, column)
        if not bernoulli(self.rng, self.keep):
            bit ^= 1
        return [column, bit]

    def check_payload(self, payload: Any) -> None:
        column, bit = require_list(payload, "payload", 2)
        require_int(column, "payload[0]", 0, self.size)
        require_int(bit, "payload[1]", 0, 2)

    def derived(self) -> dict:
        return {**super().derived(), "hadamard_size": self.size}

