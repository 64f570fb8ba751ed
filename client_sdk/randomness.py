"""Randomness for the device path: the OS CSPRNG and exact samplers built on integer draws.

Every draw in ``client_sdk`` goes through an object with three methods, ``randbelow(n)``, ``randbits(k)`` and
``token_bytes(n)``.  Production uses :class:`SecureRandom` (``secrets`` / ``os.urandom``).  Tests may pass
:class:`DeterministicRandom`, which is seeded and therefore never suitable on a device.

Bernoulli draws compare a uniform integer with an exact rational threshold, so a probability is never rounded by
floating point at draw time.  Probabilities that come from ``exp(eps)`` are quantized once, in the spec, to a
multiple of ``2**-32`` and always in the direction that keeps the privacy ratio at or below ``e**eps``
(:func:`quantize_down`, :func:`quantize_up`): from the exact rational of a double at or below e**eps
(:func:`exp_rounded`), never from a rounded quotient; the estimators de-bias with the same quantized values.

Discrete Laplace and discrete Gaussian sampling follow Canonne, Kamath, Steinke, "The Discrete Gaussian for
Differential Privacy" (NeurIPS 2020), Algorithms 1, 2 and 3: exact for a rational scale (or variance parameter),
using only integer arithmetic.  The aggregators of distributed campaigns draw their noise with the same two
samplers (``estimators.distributed``).
"""

from __future__ import annotations

import math
import random
import secrets
from fractions import Fraction

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Protocol
else:
    Protocol = object  # at run time RandomSource is a plain class: nothing checks it but mypy

PROB_BITS = 32
PROB_DENOMINATOR = 1 << PROB_BITS


class RandomSource(Protocol):
    def randbelow(self, n: int) -> int: ...

    def randbits(self, k: int) -> int: ...

    def token_bytes(self, n: int) -> bytes: ...


class SecureRandom:
    "The operating system's CSPRNG (``secrets``); the only source the SDK uses by default"

    def randbelow(self, n: int) -> int:
        return secrets.randbelow(n)

    def randbits(self, k: int) -> int:
        return secrets.randbits(k)

    def token_bytes(self, n: int) -> bytes:
        return secrets.token_bytes(n)


class DeterministicRandom:
    "A seeded source for tests and reproducible examples; predictable, so never for real reports"

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def randbelow(self, n: int) -> int:
        if n <= 0:
            raise ValueError("randbelow needs n > 0")
        return self._random.randrange(n)

    def randbits(self, k: int) -> int:
        return self._random.getrandbits(k) if k > 0 else 0

    def token_bytes(self, n: int) -> bytes:
        return self._random.randbytes(n)


class ByteStreamRandom:
    """Draws from a fixed byte string, consuming it exactly as :class:`SecureRandom` consumes ``os.urandom``.

    ``randbits(k)`` reads ceil(k/8) bytes big-endian and drops the excess low bits, ``randbelow(n)`` repeats
    ``randbits(n.bit_length())`` until the result is below n, ``token_bytes(n)`` reads n bytes (CPython's
    ``random.SystemRandom`` and ``secrets``).  The conformance vectors (``conformance/``) are made with it, so every
    SDK that draws the same way from the same bytes produces the same payload.  Running out raises ``EOFError``."""

    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)
        self.consumed = 0

    def token_bytes(self, n: int) -> bytes:
        if self.consumed + n > len(self._data):
            raise EOFError("the byte stream is exhausted")
        out = self._data[self.consumed:self.consumed + n]
        self.consumed += n
        return out

    def randbits(self, k: int) -> int:
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        size = (k + 7) // 8
        return int.from_bytes(self.token_bytes(size), "big") >> (size * 8 - k)

    def randbelow(self, n: int) -> int:
        if n <= 0:
            raise ValueError("randbelow needs n > 0")
        bits = n.bit_length()
        r = self.randbits(bits)
        while r >= n:
            r = self.randbits(bits)
        return r


SECURE_RANDOM = SecureRandom()

_EXP_BITS = 200  # fixed-point precision of exp_rounded: far below an ulp of any double it returns
_EXP_ONE = 1 << _EXP_BITS
_DOUBLE_BITS = 53


def exp_rounded(x: float) -> float:
    """e**x as a double from a 200-bit fixed-point evaluation, for |x| <= 64; for x >= 0 at or below e**x.

    The mechanisms' probabilities derive from e**eps; libm's ``exp`` differs between platforms and languages in the
    last bit for about one epsilon in four (V8 against glibc), and a changed bit changes the quantized thresholds
    and Piecewise's constants.  This is integer arithmetic only (Taylor series of x / 2**s, then s squarings, every
    step rounded down), so every SDK computes the same bits (``sdk-js/src/randomness.ts`` is the same algorithm).
    For x >= 0 every step rounds down and the result is truncated to a double, so it never exceeds e**x and a
    privacy ratio built on it never exceeds e**eps; for x < 0 (variances and Hybrid's branch weight only) it is
    within an ulp of e**x in either direction."""
    if not math.isfinite(x) or abs(x) > 64:
        raise ValueError("exp_rounded needs |x| <= 64")
    ratio = Fraction(abs(x))  # exact: a dyadic rational n / 2**q
    shift = 8 + int(abs(x)).bit_length()  # x / 2**shift < 2**-8: the series converges in a few dozen terms
    y = (ratio.numerator << _EXP_BITS) // (ratio.denominator << shift)
    total, term, i = _EXP_ONE, _EXP_ONE, 1
    while term:
        term = term * y // _EXP_ONE // i
        total += term
        i += 1
    for _ in range(shift):
        total = total * total // _EXP_ONE
    if x < 0:
        total = _EXP_ONE * _EXP_ONE // total
    drop = total.bit_length() - _DOUBLE_BITS  # > 0: total >= 2**200 e**-64
    return math.ldexp(total >> drop, drop - _EXP_BITS)  # truncated to 53 bits: exact, never rounded up


def quantize_down(probability: float | Fraction) -> Fraction:
    "The largest multiple of 2**-32 at or below ``probability`` (exact for a Fraction: no float rounding first)"
    return Fraction(math.floor(probability * PROB_DENOMINATOR), PROB_DENOMINATOR)


def quantize_up(probability: float | Fraction) -> Fraction:
    "The smallest multiple of 2**-32 at or above ``probability`` (exact for a Fraction: no float rounding first)"
    return Fraction(math.ceil(probability * PROB_DENOMINATOR), PROB_DENOMINATOR)


def bernoulli(rng: RandomSource, probability: Fraction) -> bool:
    "True with exactly ``probability`` (a rational in [0, 1])"
    return rng.randbelow(probability.denominator) < probability.numerator


def bernoulli_many(rng: RandomSource, threshold: int, count: int) -> list[bool]:
    """``count`` independent draws, each True with probability ``threshold / 2**32``.

    One call to the CSPRNG for all draws: 4 random bytes per draw, compared as unsigned integers."""
    words = memoryview(rng.token_bytes(4 * count)).cast("I")
    return [word < threshold for word in words]


def uniform_unit(rng: RandomSource) -> float:
    "A uniform double in [0, 1) on the grid of multiples of 2**-53"
    return rng.randbits(53) / (1 << 53)


def bernoulli_exp(rng: RandomSource, gamma: Fraction) -> bool:
    "True with probability exp(-gamma), gamma >= 0 rational (CKS 2020, Algorithm 1), exactly"
    while gamma > 1:
        if not _bernoulli_exp_unit(rng, Fraction(1)):
            return False
        gamma -= 1
    return _bernoulli_exp_unit(rng, gamma)


def _bernoulli_exp_unit(rng: RandomSource, gamma: Fraction) -> bool:
    k = 1
    while rng.randbelow(gamma.denominator * k) < gamma.numerator:
        k += 1
    return k % 2 == 1


def discrete_laplace(rng: RandomSource, scale: Fraction) -> int:
    """An integer Y with P(Y = y) proportional to exp(-|y| / scale), exactly (CKS 2020, Algorithm 2)."""
    if scale <= 0:
        raise ValueError("scale must be positive")
    t, s = scale.numerator, scale.denominator
    one = Fraction(1)
    while True:
        u = rng.randbelow(t)
        if not bernoulli_exp(rng, Fraction(u, t)):
            continue
        v = 0
        while bernoulli_exp(rng, one):
            v += 1
        y = (u + t * v) // s
        negative = rng.randbits(1) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_gaussian(rng: RandomSource, sigma2: Fraction) -> int:
    """An integer Y with P(Y = y) proportional to exp(-y^2 / (2 sigma2)), exactly (CKS 2020, Algorithm 3).

    Rejection from a discrete Laplace of scale t = floor(sigma) + 1: accept Y with probability
    exp(-(|Y| - sigma2/t)^2 / (2 sigma2)), a Bernoulli(exp(-gamma)) with a rational gamma."""
    if sigma2 <= 0:
        raise ValueError("sigma2 must be positive")
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1  # floor(sigma) + 1 >= sigma
    scale = Fraction(t)
    while True:
        y = discrete_laplace(rng, scale)
        gamma = (abs(y) - sigma2 / t) ** 2 / (2 * sigma2)
        if bernoulli_exp(rng, gamma):
            return y
