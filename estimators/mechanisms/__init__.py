"""The server side of every mechanism, found by a spec's ``mechanism`` name: ``mechanism_for(spec)``.

Every module of this package is imported here, and each :class:`ServerMechanism` subclass that declares
``names`` registers itself (see ``base``).  The collector, the estimators and the simulator go through it.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..registry import REGISTRY, ReportBatch, mechanism_for, registered
from .base import ServerMechanism

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["REGISTRY", "ReportBatch", "ServerMechanism", "mechanism_for", "registered"]
