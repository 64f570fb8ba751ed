"""What every mechanism offers: perturb a value into a JSON payload, check a payload, describe itself."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import Any

from ..errors import PayloadError, ValueNotInDomain
from ..randomness import SECURE_RANDOM, RandomSource
from ..spec import Spec

_HEX = re.compile(r"[0-9a-fA-F]*")  # fullmatch only: bytes.fromhex would also skip whitespace


class Mechanism(ABC):
    "A local randomizer for one campaign spec; ``rng`` defaults to the OS CSPRNG"

    def __init__(self, spec: Spec, *, rng: RandomSource | None = None) -> None:
        self.spec = spec
        self.rng: RandomSource = rng if rng is not None else SECURE_RANDOM

    @abstractmethod
    def perturb(self, value: Any) -> Any:
        "The randomized, JSON-serialisable payload for one true value"

    @abstractmethod
    def check_payload(self, payload: Any) -> None:
        "Raise PayloadError (naming the field) unless ``payload`` is one this mechanism can produce"

    @abstractmethod
    def derived(self) -> dict:
        "The derived probabilities and constants, as plain JSON (informational)"


class CategoricalMechanism(Mechanism):
    "A frequency oracle over ``spec.domain``: a report supports value v w.p. p* if the truth is v, else q*"

    p_star: float
    q_star: float

    def __init__(self, spec: Spec, *, rng: RandomSource | None = None) -> None:
        super().__init__(spec, rng=rng)
        self.d = spec.domain_size

    def encode(self, value: Any) -> int:
        "Index of ``value`` in the domain; the catch-all's index for other values when the spec names one"
        index = self.spec.index_of(value)
        if index is None:
            if self.spec.catch_all is None:
                # The message deliberately does not repeat the value: errors can end up in logs.
                raise ValueNotInDomain(
                    f"value is not in the domain of campaign {self.spec.name!r} and the spec names no catch_all"
                )
            index = self.spec.index_of(self.spec.catch_all)
            assert index is not None
        return index

    def perturb(self, value: Any) -> Any:
        return self.perturb_index(self.encode(value))

    @abstractmethod
    def perturb_index(self, index: int) -> Any:
        "The payload for the domain entry at ``index``"

    @property
    def variance_factor(self) -> float:
        "Per-report variance of the estimated fraction of a value with true frequency 0: q*(1-q*)/(p*-q*)^2"
        return self.q_star * (1 - self.q_star) / (self.p_star - self.q_star) ** 2

    def derived(self) -> dict:
        return {"p_star": self.p_star, "q_star": self.q_star, "variance_factor": self.variance_factor}


def require_int(payload: Any, field: str, low: int, high: int) -> int:
    "``payload`` must be an integer in [low, high)"
    if isinstance(payload, bool) or not isinstance(payload, int):
        raise PayloadError(field, "must be an integer")
    if not low <= payload < high:
        raise PayloadError(field, f"must be in [{low}, {high})")
    return payload


def require_list(payload: Any, field: str, length: int) -> list:
    if not isinstance(payload, list) or len(payload) != length:
        raise PayloadError(field, f"must be a list of {length} elements")
    return payload


def require_hex(payload: Any, field: str, length: int) -> bytes:
    "``payload`` must be a lower- or upper-case hex string of exactly ``length`` characters"
    if not isinstance(payload, str) or len(payload) != length:
        raise PayloadError(field, f"must be a hex string of {length} characters")
    if not _HEX.fullmatch(payload):
        raise PayloadError(field, "must contain only hex digits")
    return bytes.fromhex(payload)
