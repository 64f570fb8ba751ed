"""Campaign kinds, collector side: the registry (:mod:`.base`) and the two built-in kinds; the outside kinds
(``LDP_TELEMETRY_KINDS``, the entry points) are imported here too, at start-up, so that every storage's
``migrate()`` makes their tables before the first request (not when a spec first names them).

docs/architecture.md ("Adding a campaign kind") lists the modules a kind has on each side."""
from client_sdk.kinds import load_outside_kinds

from ..errors import ProvisionError
from .base import (
    Accepted,
    ApiGet,
    CollectorKind,
    Peers,
    ReportItem,
    Window,
    collector_kind,
    register_collector_kind,
    unregister_collector_kind,
)
from .distributed import DISTRIBUTED, DistributedCampaigns
from .heavy_hitters import HEAVY_HITTERS, HeavyHittersCampaigns
from .local import LOCAL, LocalCampaigns
from .poplar1.kind import POPLAR1, Poplar1Campaigns
from .quantiles import QUANTILES, QuantilesCampaigns
from .repeated import REPEATED, RepeatedCampaigns

load_outside_kinds()  # last: an outside kind's modules import this package's names

__all__ = ["DISTRIBUTED", "HEAVY_HITTERS", "LOCAL", "POPLAR1", "QUANTILES", "REPEATED", "Accepted", "ApiGet",
           "CollectorKind", "Poplar1Campaigns",
           "DistributedCampaigns", "HeavyHittersCampaigns", "LocalCampaigns", "Peers", "ProvisionError",
           "QuantilesCampaigns", "RepeatedCampaigns", "ReportItem", "Window", "collector_kind",
           "register_collector_kind",
           "unregister_collector_kind"]
