"""RAPPOR (Erlingsson, Pihur, Korolova, CCS 2014): parameters.

Encoding, the memoized permanent randomized response and the instantaneous randomized response are added by the
RAPPOR issue; this module holds the validated parameters the spec needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .errors import SpecError

MD5_DIGEST_BYTES = 16


@dataclass(frozen=True)
class RapporParams:
    "Bloom filter of ``k`` bits, ``h`` hashes, ``m`` cohorts; PRR ``f``; IRR ``p`` (bit 0) and ``q`` (bit 1)"

    k: int = 16
    h: int = 2
    m: int = 64
    f: float = 0.5
    p: float = 0.5
    q: float = 0.75

    @classmethod
    def from_dict(cls, data: Any) -> "RapporParams":
        if not isinstance(data, dict):
            raise SpecError("rappor", "must be an object with k, h, m, f, p, q")
        unknown = sorted(set(data) - {"k", "h", "m", "f", "p", "q"})
        if unknown:
            raise SpecError(f"rappor.{unknown[0]}", "unknown field; allowed: k, h, m, f, p, q")
        values = {}
        for name in ("k", "h", "m"):
            value = data.get(name, getattr(cls, name))
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise SpecError(f"rappor.{name}", "must be a positive integer")
            values[name] = value
        if values["h"] > MD5_DIGEST_BYTES:
            raise SpecError("rappor.h", f"must be at most {MD5_DIGEST_BYTES} (one MD5 digest byte per hash)")
        if values["m"] & (values["m"] - 1):
            raise SpecError("rappor.m", "must be a power of two")
        for name in ("f", "p", "q"):
            value = data.get(name, getattr(cls, name))
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise SpecError(f"rappor.{name}", "must be a number")
            values[name] = float(value)
        if not 0 <= values["f"] < 1:
            raise SpecError("rappor.f", "must satisfy 0 <= f < 1")
        if not 0 <= values["p"] < values["q"] <= 1:
            raise SpecError("rappor.p", "must satisfy 0 <= p < q <= 1")
        return cls(**values)

    def to_dict(self) -> dict:
        return {"k": self.k, "h": self.h, "m": self.m, "f": self.f, "p": self.p, "q": self.q}

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
        "Privacy of one report: h ln(p11 (1 - p01) / (p01 (1 - p11)))"
        p11, p01 = self.p11, self.p01
        if p01 <= 0 or p11 >= 1:
            return math.inf
        return self.h * math.log(p11 * (1 - p01) / (p01 * (1 - p11)))

    @property
    def epsilon_inf(self) -> float:
        "Long-term privacy of one value under the memoized PRR: 2h ln((1 - f/2) / (f/2))"
        if self.f == 0:
            return math.inf
        return 2 * self.h * math.log((1 - self.f / 2) / (self.f / 2))
