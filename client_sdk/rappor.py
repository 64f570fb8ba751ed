"""RAPPOR (Erlingsson, Pihur, Korolova, CCS 2014): Bloom-filter reports with a memoized permanent randomized
response (PRR) and a fresh instantaneous randomized response (IRR) on every report.

Encodings (``"rappor": {"encoding": ...}``; omitted means ``"boolean"`` when k = 1, else ``"bloom"``):

=========  ====================================================================================================
bloom      the reference client's Bloom filter: ``d = MD5(BE32(cohort) || UTF-8(value))``; for k <= 256 hash i is
           ``d[i] mod k`` (one digest byte per hash, h <= 16); for 256 < k <= 65536 hash i is
           ``(d[2i] * 256 + d[2i+1]) mod k`` (two bytes per hash, h <= 8).  k <= 256 is bit-for-bit the
           reference (``google/rappor`` ``client/python/rappor.py``), so its map files agree with ours.
basic      one bit per candidate, no hashing (h = 1): bit i is the spec's ``candidates[i]``; k = len(candidates)
boolean    k = 1, h = 1: bit 0 is the value (True/False)
=========  ====================================================================================================

Per report: the Bloom bits B; the PRR sets each bit to 1 w.p. f/2, to 0 w.p. f/2, keeps it otherwise; the IRR
reports a PRR 1-bit as 1 w.p. q and a PRR 0-bit as 1 w.p. p.  The PRR is a deterministic function of the device
secret, the campaign name and B (HMAC-SHA256, expanded in counter mode as in HKDF-Expand, RFC 5869), so the same
value always gets the same PRR and repeated reports cost at most epsilon_inf together.  The IRR is drawn from the
CSPRNG on every call; a transport that retries a send must resend the stored payload, never call ``perturb``
again.

Wire format: ``{"cohort": c, "bits": hex}`` with ``c`` in [0, m) and ``bits`` ``2*ceil(k/8)`` hex characters,
Bloom bit i at bit i of the string, most significant bit first; padding bits 0.

The randomizer itself is ``client_sdk.mechanisms.rappor.RapporMechanism``; this module holds what the device and
the server share: the parameters, the Bloom hashing, the cohort and PRR derivations, the quantized probabilities.

Probabilities are quantized to multiples of 2**-32 in the direction that adds noise: f/2 and p rounded up, q down.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import struct
from collections.abc import Mapping, Sequence
from fractions import Fraction

from .errors import SpecError, ValueNotInDomain
from .frozen import Frozen
from .randomness import PROB_DENOMINATOR, exp_rounded, quantize_down, quantize_up

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

MD5_DIGEST_BYTES = 16
MAX_ONE_BYTE_BITS = 256
MAX_BLOOM_BITS = 1 << 16
# Cohorts: the reference's deployments use 32-128; 1024 leaves room.  The aggregate holds m * (k + 1) counts, so
# m * k is bounded too (m = 2**40 would make every ingest allocate terabytes).
MAX_COHORTS = 1 << 10
MAX_COHORT_BITS = 1 << 22
MIN_SECRET_BYTES = 32
ENCODINGS = ("bloom", "basic", "boolean")
PRR_CACHE_SIZE = 4096
# What a spec's "rappor" object means when it leaves a field out (and RapporParams' defaults)
DEFAULT_K, DEFAULT_H, DEFAULT_M = 16, 2, 64
DEFAULT_PROBABILITIES = {"f": 0.5, "p": 0.5, "q": 0.75}

_PRR_TAG = b"ldp-telemetry/rappor/prr/v1\x00"
_COHORT_TAG = b"ldp-telemetry/rappor/cohort/v1"


def default_encoding(k: int) -> str:
    "The encoding a spec means when it names none: boolean for k = 1, else bloom"
    return "boolean" if k == 1 else "bloom"


def hash_bytes(k: int) -> int:
    "MD5 digest bytes per Bloom hash: 1 up to 256 bits, 2 above"
    return 1 if k <= MAX_ONE_BYTE_BITS else 2


def max_hashes(k: int) -> int:
    "How many hashes one MD5 digest provides for a k-bit filter"
    return MD5_DIGEST_BYTES // hash_bytes(k)


class RapporParams(Frozen):
    "Bloom filter of ``k`` bits, ``h`` hashes, ``m`` cohorts; PRR ``f``; IRR ``p`` (bit 0) and ``q`` (bit 1)"

    __slots__ = _fields = ("k", "h", "m", "f", "p", "q", "encoding")
    k: int
    h: int
    m: int
    f: float
    p: float
    q: float
    encoding: str

    def __init__(self, k: int = DEFAULT_K, h: int = DEFAULT_H, m: int = DEFAULT_M,
                 f: float = DEFAULT_PROBABILITIES["f"], p: float = DEFAULT_PROBABILITIES["p"],
                 q: float = DEFAULT_PROBABILITIES["q"], encoding: str = "") -> None:
        "``encoding`` \"\" means default_encoding(k)"
        self._set(k=k, h=h, m=m, f=f, p=p, q=q, encoding=encoding or default_encoding(k))

    @classmethod
    def from_dict(cls, data: Any) -> RapporParams:
        "Validate ``{k, h, m, f, p, q[, encoding]}``; raises SpecError naming the field"
        if not isinstance(data, dict):
            raise SpecError("rappor", "must be an object with k, h, m, f, p, q")
        unknown = sorted(set(data) - {"k", "h", "m", "f", "p", "q", "encoding"})
        if unknown:
            raise SpecError(f"rappor.{unknown[0]}", "unknown field; allowed: k, h, m, f, p, q, encoding")
        k = _positive_int(data, "k", DEFAULT_K)
        encoding = data.get("encoding", default_encoding(k))
        if encoding not in ENCODINGS:
            raise SpecError("rappor.encoding", f"must be one of {list(ENCODINGS)}")
        h = _positive_int(data, "h", DEFAULT_H if encoding == "bloom" else 1)
        m = _positive_int(data, "m", DEFAULT_M)
        _check_shape(k, h, m, encoding)
        probabilities = {name: _probability(data, name, DEFAULT_PROBABILITIES[name]) for name in ("f", "p", "q")}
        if not 0 <= probabilities["f"] < 1:
            raise SpecError("rappor.f", "must satisfy 0 <= f < 1")
        if not 0 <= probabilities["p"] < probabilities["q"] <= 1:
            raise SpecError("rappor.p", "must satisfy 0 <= p < q <= 1")
        if quantize_down(probabilities["q"]) <= quantize_up(probabilities["p"]):  # what the IRR really draws
            raise SpecError("rappor.q", "must exceed p by at least 2**-32 (probabilities are quantized)")
        return cls(k=k, h=h, m=m, encoding=encoding, **probabilities)

    def to_dict(self) -> dict:
        "Plain JSON; ``encoding`` only when it is not the default for k, so older fingerprints stay the same"
        out: dict[str, Any] = {"k": self.k, "h": self.h, "m": self.m, "f": self.f, "p": self.p, "q": self.q}
        if self.encoding != default_encoding(self.k):
            out["encoding"] = self.encoding
        return out

    @property
    def p11(self) -> float:
        "P(reported bit = 1 | Bloom bit = 1)"
        return self.q * (1 - self.f / 2) + self.p * self.f / 2

    @property
    def p01(self) -> float:
        "P(reported bit = 1 | Bloom bit = 0)"
        return self.p * (1 - self.f / 2) + self.q * self.f / 2

    @property
    def epsilon_one(self) -> float:
        """Privacy of one report: h ln(p11 (1 - p01) / (p01 (1 - p11))), rounded up until e**epsilon provably covers
        the exact ratio of the quantized probabilities the IRR draws with (``exp_rounded`` is at or below e**x)"""
        p11, p01 = self.p11, self.p01
        if p01 <= 0 or p11 >= 1:
            return math.inf
        epsilon = self.h * math.log(p11 * (1 - p01) / (p01 * (1 - p11)))
        f_half, p, q = quantized_probabilities(self)
        one, zero = q * (1 - f_half) + p * f_half, p * (1 - f_half) + q * f_half
        ratio = (one * (1 - zero) / (zero * (1 - one))) ** self.h
        while epsilon <= 64 and Fraction(exp_rounded(epsilon)) < ratio:
            epsilon *= 1 + 2**-52
        return epsilon

    @property
    def epsilon_inf(self) -> float:
        "Long-term privacy of one value under the memoized PRR: 2h ln((1 - f/2) / (f/2))"
        if self.f == 0:
            return math.inf
        return 2 * self.h * math.log((1 - self.f / 2) / (self.f / 2))


def _positive_int(data: dict, name: str, default: int) -> int:
    value = data.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SpecError(f"rappor.{name}", "must be a positive integer")
    return value


def _probability(data: dict, name: str, default: float) -> float:
    value = data.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(f"rappor.{name}", "must be a number")
    try:
        value = float(value)
    except OverflowError:  # an integer too large for a float
        raise SpecError(f"rappor.{name}", "must be a probability") from None
    if not math.isfinite(value):
        raise SpecError(f"rappor.{name}", "must be a number")
    return value


def _check_shape(k: int, h: int, m: int, encoding: str) -> None:
    if k > MAX_BLOOM_BITS:
        raise SpecError("rappor.k", f"must be at most {MAX_BLOOM_BITS}")
    if encoding == "bloom":
        if k < 2:
            raise SpecError(
                "rappor.k", "must be at least 2 for the bloom encoding (k = 1 is the boolean encoding)"
            )
        if h > max_hashes(k):
            per_hash = "one MD5 digest byte" if hash_bytes(k) == 1 else "two MD5 digest bytes"
            raise SpecError("rappor.h", f"must be at most {max_hashes(k)} for k = {k} ({per_hash} per hash)")
    elif h != 1:
        raise SpecError("rappor.h", f"must be 1 for the {encoding} encoding")
    if encoding == "boolean" and k != 1:
        raise SpecError("rappor.k", "must be 1 for the boolean encoding")
    if m & (m - 1):
        raise SpecError("rappor.m", "must be a power of two")
    if m > MAX_COHORTS:
        raise SpecError("rappor.m", f"must be at most {MAX_COHORTS}")
    if m * k > MAX_COHORT_BITS:
        raise SpecError("rappor.m", f"m * k must be at most {MAX_COHORT_BITS} (the aggregate holds m * k counts)")
    if h > k:
        raise SpecError("rappor.h", "must be at most k")


# -- encoding ---------------------------------------------------------------------------------------------------
def bloom_bit_positions(value: str, cohort: int, k: int, h: int) -> list[int]:
    "The h Bloom bits of ``value`` in ``cohort`` (may repeat): MD5 of BE32(cohort) || UTF-8(value), as the reference"
    return bloom_positions_many([value.encode("utf-8")], cohort, k, h)


def bloom_positions_many(values: Sequence[bytes], cohort: int, k: int, h: int) -> list[int]:
    """The h Bloom bits of every UTF-8 encoded value in ``cohort``, one flat list (value-major): the one
    definition of the Bloom hashing, shared by the device and the server's candidate map."""
    prefix = struct.pack(">L", cohort)
    md5 = hashlib.md5
    if hash_bytes(k) == 1:
        return [byte % k for value in values for byte in md5(prefix + value).digest()[:h]]
    pairs = [md5(prefix + value).digest()[: 2 * h] for value in values]
    return [((digest[2 * i] << 8) | digest[2 * i + 1]) % k for digest in pairs for i in range(h)]


def value_bit_positions(
    params: RapporParams, value: Any, cohort: int, candidates: Sequence[str] | Mapping[str, int] | None = None
) -> list[int]:
    "The Bloom bits of ``value`` in ``cohort`` under the params' encoding (basic needs the candidate list)"
    if params.encoding == "bloom":
        if not isinstance(value, str):
            raise TypeError("RAPPOR values must be strings")
        return bloom_bit_positions(value, cohort, params.k, params.h)
    if params.encoding == "boolean":
        if not isinstance(value, bool) and value not in (0, 1):
            raise TypeError("boolean RAPPOR values must be True or False")
        return [0] if value else []
    return [_candidate_index(candidates, value)]


def _candidate_index(candidates: Sequence[str] | Mapping[str, int] | None, value: Any) -> int:
    if candidates is None:
        raise SpecError("candidates", "the basic encoding needs the spec's candidate list")
    if not isinstance(candidates, Mapping):
        candidates = {candidate: i for i, candidate in enumerate(candidates)}
    index = candidates.get(value) if isinstance(value, str) else None
    if index is None:
        # The message deliberately does not repeat the value: errors can end up in logs.
        raise ValueNotInDomain("value is not one of the campaign's candidates (basic RAPPOR)")
    return index


# -- per-device secret, cohort and PRR ------------------------------------------------------------------------
def cohort_from_secret(secret: bytes, m: int) -> int:
    """The device's cohort among ``m`` (a power of two): HMAC-SHA256(secret, tag) mod m.

    Uniform over devices, stable for a secret, and nested: the cohort for m is the cohort for 2m mod m."""
    if m < 1 or m & (m - 1):
        raise ValueError("m must be a power of two")
    digest = hmac.new(secret, _COHORT_TAG, hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") % m


def prr_words(secret: bytes, campaign: str, bloom_bytes: bytes, count: int) -> tuple[int, ...]:
    """``count`` 32-bit words derived from HMAC-SHA256(secret, tag || campaign || Bloom bits), expanded in
    counter mode (HKDF-Expand style): uniform and independent for a random secret, fixed for a given input."""
    name = campaign.encode("utf-8")
    message = _PRR_TAG + len(name).to_bytes(2, "big") + name + bloom_bytes
    key = hmac.new(secret, message, hashlib.sha256).digest()
    blocks = (4 * count + 31) // 32
    stream = b"".join(hmac.new(key, i.to_bytes(4, "big"), hashlib.sha256).digest() for i in range(blocks))
    return struct.unpack(f">{count}I", stream[: 4 * count])


def quantized_probabilities(params: RapporParams) -> tuple[Fraction, Fraction, Fraction]:
    "The probabilities the SDK draws with, multiples of 2**-32 rounded towards more noise: (f/2 up, p up, q down)"
    return quantize_up(params.f / 2), quantize_up(params.p), quantize_down(params.q)


def probability_threshold(probability: Fraction) -> int:
    "A probability that is a multiple of 2**-32 as a threshold out of 2**32"
    return int(probability * PROB_DENOMINATOR)
