"""The server mechanisms by name, and the batch of reports they exchange.

Each :class:`~estimators.mechanisms.base.ServerMechanism` subclass that declares ``names`` enters ``REGISTRY`` as
it is defined (``estimators.mechanisms`` imports every module of its package); :func:`mechanism_for` finds the one
of a spec.  This module sits below both the mechanisms and the estimators they build on (``frequency``, ``means``,
``rappor``), so those import it without loading the mechanisms package.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from client_sdk.errors import SpecError
from client_sdk.kinds import kind_of
from client_sdk.spec import Spec, load_spec

if TYPE_CHECKING:  # the mechanisms import this module: the class is named here for the type checker only
    from .mechanisms.base import ServerMechanism

REGISTRY: dict[str, type[ServerMechanism]] = {}


@dataclass
class ReportBatch:
    "The payloads of ``n`` reports for one mechanism, column by column (numpy arrays)"

    mechanism: str
    n: int
    columns: dict[str, np.ndarray] = field(default_factory=dict)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def to_payloads(self) -> list:
        "The JSON payloads, exactly as the SDK would send them"
        return registered(self.mechanism).payloads_of(self)


def registered(name: str) -> type[ServerMechanism]:
    "The server class of a mechanism name"
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown mechanism {name!r}") from None


def mechanism_for(spec: Any) -> ServerMechanism:
    """The server side of ``spec`` (a Spec, dict or JSON string); cached per spec.

    The spec object a cached mechanism holds is found by identity first: hashing a spec hashes every field (its
    whole domain), which cost the collector about a tenth of a one-report POST's CPU.  Only that object is
    recorded (no equal copy is kept alive), and the entry holds it, so its id cannot be reused meanwhile."""
    hit = _BY_ID.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    spec = load_spec(spec)
    try:
        kind_of(spec).require_randomizer(spec)
    except SpecError:  # e.g. prio3: shares, estimated from its releases
        raise ValueError(f"campaign {spec.name!r} is a {spec.kind!r} campaign ({spec.trust}): its reports have no "
                         "local-DP estimator (its kind's estimate side makes its estimates)") from None
    cached = _CACHE.get(spec)
    if cached is None:
        cached = registered(spec.mechanism)(spec)
        with _CACHE_LOCK:  # the collector may serve from several threads
            if len(_CACHE) >= _CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[spec] = cached
    if cached.spec is spec:
        with _CACHE_LOCK:
            if len(_BY_ID) >= _CACHE_SIZE:
                _BY_ID.pop(next(iter(_BY_ID)))
            _BY_ID[id(spec)] = (spec, cached)
    return cached


_CACHE: dict[Spec, ServerMechanism] = {}
_BY_ID: dict[int, tuple[Spec, ServerMechanism]] = {}  # id(spec) -> (spec, its mechanism): no hashing
_CACHE_SIZE = 256
_CACHE_LOCK = threading.Lock()
