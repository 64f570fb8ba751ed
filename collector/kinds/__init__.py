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
from .local import LOCAL, LocalCampaigns
from .quantiles import QUANTILES, QuantilesCampaigns

__all__ = ["DISTRIBUTED", "LOCAL", "QUANTILES", "Accepted", "ApiGet", "CollectorKind", "DistributedCampaigns",
           "LocalCampaigns", "QuantilesCampaigns", "ReportItem", "Window", "collector_kind", "register_collector_kind",
           "unregister_collector_kind"]
