"""Campaign kinds, device side (standard library only): the registry and the two built-in kinds.

See :mod:`client_sdk.kinds.base` for the interface and docs/architecture.md ("Adding a campaign kind")."""

from .base import (
    DEFAULT_KIND,
    CampaignKind,
    Registry,
    find_kind,
    kind_name,
    kind_names,
    kind_of,
    register_kind,
    unregister_kind,
)
from .distributed import DISTRIBUTED, DistributedKind
from .local import LOCAL, LocalKind

__all__ = ["DEFAULT_KIND", "DISTRIBUTED", "LOCAL", "CampaignKind", "DistributedKind", "Registry", "LocalKind",
           "find_kind", "kind_name", "kind_names", "kind_of", "register_kind", "unregister_kind"]
