"""The poplar1 kind, estimate side: each level's noise calibrated for the whole walk (``accounting``), the heavy
hitters of a walk's release with intervals (``estimate``), and the registration with its typed estimate
(``kind``).

The names below load with their first use: the registry imports ``kind`` at start-up, which needs none of the
accounting (the report command's module budget, tests/budgets)."""

from __future__ import annotations

from importlib import import_module
from typing import Any

_WHERE = {"LEVEL_SHIFT": "accounting", "calibrate_walk": "accounting", "level_release": "accounting",
          "walk_guarantee": "accounting", "walk_noise": "accounting", "estimate_walk": "estimate",
          "POPLAR1_ESTIMATES": "kind", "Poplar1Estimates": "kind", "Poplar1Walk": "kind"}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(name)
    return getattr(import_module(f".{_WHERE[name]}", __name__), name)
