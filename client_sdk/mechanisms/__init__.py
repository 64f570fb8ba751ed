"""The local randomizers, one class per mechanism, chosen by a spec's ``mechanism`` name."""

from __future__ import annotations

from typing import Any

from ..randomness import RandomSource
from ..spec import Spec, load_spec
from .base import CategoricalMechanism, Mechanism
from .categorical import GRR, OLH, OUE, SUE, Hadamard
from .numeric import Duchi, Hybrid, Laplace, NumericMechanism, Piecewise

MECHANISM_CLASSES: dict[str, type[Mechanism]] = {
    "grr": GRR,
    "sue": SUE,
    "oue": OUE,
    "olh": OLH,
    "hadamard": Hadamard,
    "laplace": Laplace,
    "duchi": Duchi,
    "piecewise": Piecewise,
    "hybrid": Hybrid,
}


def mechanism_from_spec(spec: Any, *, rng: RandomSource | None = None, **options: Any) -> Mechanism:
    """The randomizer for ``spec`` (a Spec, dict or JSON string).

    ``rng`` defaults to the OS CSPRNG.  RAPPOR also takes ``secret`` (the device secret, bytes) and
    ``cohort``; without them it uses a fresh in-memory secret, which gives no long-term protection across
    processes (``client_sdk.Client`` persists one)."""
    spec = load_spec(spec)
    if spec.mechanism == "rappor":
        from ..rappor import RapporMechanism

        return RapporMechanism(spec, rng=rng, **options)
    if options:
        raise TypeError(f"unexpected options for {spec.mechanism!r}: {sorted(options)}")
    return MECHANISM_CLASSES[spec.mechanism](spec, rng=rng)


def derived_parameters(spec: Spec) -> dict:
    "The mechanism's derived probabilities as plain JSON (infinite values become None)"
    if spec.mechanism == "rappor":
        params = spec.rappor
        out = {"p11": params.p11, "p01": params.p01, "epsilon_one": params.epsilon_one,
               "epsilon_inf": params.epsilon_inf}
    else:
        out = MECHANISM_CLASSES[spec.mechanism](spec).derived()
    return {key: (None if isinstance(value, float) and value in (float("inf"), float("-inf")) else value)
            for key, value in out.items()}


__all__ = [
    "MECHANISM_CLASSES", "Mechanism", "CategoricalMechanism", "NumericMechanism", "GRR", "SUE", "OUE", "OLH",
    "Hadamard", "Laplace", "Duchi", "Piecewise", "Hybrid", "mechanism_from_spec", "derived_parameters",
]
