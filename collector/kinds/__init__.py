"""Campaign kinds, collector side: the registry (:mod:`.base`) and the two built-in kinds.

docs/architecture.md ("Adding a campaign kind") lists the modules a kind has on each side."""

from .base import (
    Accepted,
    ApiGet,
    CollectorKind,
    ReportItem,
    Window,
    collector_kind,
    register_collector_kind,
    unregister_collector_kind,
)
from .distributed import DISTRIBUTED, DistributedCampaigns
from .heavy_hitters import HEAVY_HITTERS, HeavyHittersCampaigns
from .local import LOCAL, LocalCampaigns

__all__ = ["DISTRIBUTED", "HEAVY_HITTERS", "LOCAL", "Accepted", "ApiGet", "CollectorKind", "DistributedCampaigns",
           "HeavyHittersCampaigns", "LocalCampaigns", "ReportItem", "Window", "collector_kind",
           "register_collector_kind", "unregister_collector_kind"]
