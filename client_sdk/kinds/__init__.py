"""Campaign kinds, device side (standard library only): the registry and the two built-in kinds.

See :mod:`client_sdk.kinds.base` for the interface and docs/architecture.md ("Adding a campaign kind")."""

from ..spec_prio3 import Prio3SpecParams
from .base import (
    DEFAULT_KIND,
    ENTRY_POINT_GROUP,
    KINDS_VARIABLE,
    CampaignKind,
    KindModuleError,
    Registry,
    find_kind,
    kind_name,
    kind_names,
    kind_of,
    load_outside_kinds,
    register_kind,
    unregister_kind,
)
from .context import DeviceContext
from .heavy_hitters.kind import HEAVY_HITTERS, HeavyHittersKind
from .local import LOCAL, LocalKind
from .poplar1.kind import POPLAR1, Poplar1Kind
from .prio3 import PRIO3, Prio3Kind
from .quantiles.kind import QUANTILES, QuantilesKind
from .repeated.kind import REPEATED, RepeatedKind

DISTRIBUTED, DistributedKind = PRIO3, Prio3Kind  # the prio3 kind's former names

__all__ = ["DEFAULT_KIND", "DISTRIBUTED", "ENTRY_POINT_GROUP", "KINDS_VARIABLE", "LOCAL", "PRIO3", "CampaignKind",
           "DeviceContext", "DistributedKind", "HEAVY_HITTERS", "HeavyHittersKind", "KindModuleError", "LocalKind",
           "POPLAR1", "Poplar1Kind", "Prio3Kind", "Prio3SpecParams", "QUANTILES", "QuantilesKind", "REPEATED",
           "Registry", "RepeatedKind",
           "find_kind", "kind_name", "kind_names", "kind_of", "load_outside_kinds", "register_kind", "unregister_kind"]
