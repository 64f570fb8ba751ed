"""What every mechanism offers: perturb a value into a JSON payload, check a payload, describe itself.

A subclass that names the spec ``mechanism`` values it implements (``names``) is registered in
``MECHANISM_CLASSES`` when its module is imported; ``client_sdk.mechanisms`` imports every module of this package,
so a new mechanism is one new module (or one new class in a family's module) on the device side.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod

from ..errors import ValueNotInDomain
from ..randomness import SECURE_RANDOM, RandomSource
from ..spec import Spec, register_mechanism
from ..wire import require_hex, require_int, require_list, require_packed_bits

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any, ClassVar

MECHANISM_CLASSES: dict[str, type[Mechanism]] = {}


def register(registry: dict[str, Any], cls: type) -> None:
    "Enter ``cls`` under each of the names it declares itself (not those it inherits); a name only once"
    for name in cls.__dict__.get("names", ()):
        if name in registry:
            raise TypeError(f"mechanism {name!r} is registered twice")
        registry[name] = cls


class Mechanism(ABC):
    "A local randomizer for one campaign spec; ``rng`` defaults to the OS CSPRNG"

    names: ClassVar[tuple[str, ...]] = ()  # the spec ``mechanism`` values this class implements
    family: ClassVar[str] = ""  # categorical, numeric or set (client_sdk.spec.FAMILIES)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        register(MECHANISM_CLASSES, cls)
        for name in cls.__dict__.get("names", ()):
            register_mechanism(name, cls.family)

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

    @classmethod
    def spec_derived(cls, spec: Spec) -> dict:
        "What a served spec shows under ``derived``: by default this randomizer's ``derived()``"
        return cls(spec).derived()


class CategoricalMechanism(Mechanism):
    "A frequency oracle over ``spec.domain``: a report supports value v w.p. p* if the truth is v, else q*"

    family = "categorical"
    p_star: float
    q_star: float

    def __init__(self, spec: Spec, *, rng: RandomSource | None = None) -> None:
        super().__init__(spec, rng=rng)
        self.d = spec.domain_size

    def encode(self, value: Any) -> int:
        """Index of ``value`` in the domain; the catch-all's index for other strings and numbers when the spec names
        one.  Anything else (None, a bool, NaN, a list) raises: it is a mistake, not a value outside the domain."""
        if isinstance(value, bool) or not isinstance(value, (str, numbers.Real)) or type(value).__name__ == "bool_":
            raise TypeError(f"campaign {self.spec.name!r} takes a string or an integer")
        if value != value:
            raise ValueError(f"campaign {self.spec.name!r} cannot report NaN")
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


__all__ = [
    "MECHANISM_CLASSES", "CategoricalMechanism", "Mechanism", "register", "require_hex", "require_int", "require_list",
    "require_packed_bits",
]
