"""The local randomizers, one class per mechanism, chosen by a spec's ``mechanism`` name.

Every module of this package is imported here, and each class that declares ``names`` registers itself in
``MECHANISM_CLASSES`` (see ``base``): adding a mechanism is adding a module (or a class to a family's module).
"""

from __future__ import annotations

import importlib
import os

from ..kinds import kind_of
from ..randomness import RandomSource
from ..spec import Spec, load_spec, set_derived_parameters
from .base import MECHANISM_CLASSES, CategoricalMechanism, Mechanism
from .categorical import GRR, OLH, OUE, SUE, Hadamard, UnaryEncoding
from .numeric import Duchi, Hybrid, Laplace, NumericMechanism, Piecewise
from .rappor import RapporMechanism

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any


def _module_names(directory: str) -> list[str]:
    "The modules in ``directory``, as pkgutil.iter_modules finds them, without importing pkgutil (importlib.util)"
    names = set()
    for entry in os.listdir(directory):
        name, _, suffix = entry.partition(".")
        if name.isidentifier() and name != "__init__" and (
                suffix in ("py", "pyc") or os.path.isfile(os.path.join(directory, entry, "__init__.py"))):
            names.add(name)
    return sorted(names)


for _directory in __path__:
    if os.path.isdir(_directory):
        _names = _module_names(_directory)
    else:  # e.g. a zip archive: pkgutil knows every kind of importer
        import pkgutil

        _names = [_module.name for _module in pkgutil.iter_modules([_directory])]
    for _name in _names:
        importlib.import_module(f"{__name__}.{_name}")


def mechanism_from_spec(spec: Any, *, rng: RandomSource | None = None, **options: Any) -> Mechanism:
    """The randomizer for ``spec`` (a Spec, dict or JSON string).

    ``rng`` defaults to the OS CSPRNG.  RAPPOR also takes ``secret`` (the device secret, bytes) and
    ``cohort``; without them it uses a fresh in-memory secret, which gives no long-term protection across
    processes (``client_sdk.Client`` persists one)."""
    spec = load_spec(spec)
    kind_of(spec).require_randomizer(spec)  # SpecError for a kind whose reports no randomizer makes
    return MECHANISM_CLASSES[spec.mechanism](spec, rng=rng, **options)


def derived_parameters(spec: Spec) -> dict:
    "The mechanism's derived probabilities as plain JSON (infinite values become None)"
    out = MECHANISM_CLASSES[spec.mechanism].spec_derived(spec)
    return {key: (None if isinstance(value, float) and value in (float("inf"), float("-inf")) else value)
            for key, value in out.items()}


set_derived_parameters(derived_parameters)

__all__ = [
    "MECHANISM_CLASSES", "Mechanism", "CategoricalMechanism", "NumericMechanism", "UnaryEncoding", "GRR", "SUE",
    "OUE", "OLH", "Hadamard", "Laplace", "Duchi", "Piecewise", "Hybrid", "RapporMechanism", "mechanism_from_spec",
    "derived_parameters",
]
