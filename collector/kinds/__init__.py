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
from .local import LOCAL, LocalCampaigns

load_outside_kinds()  # last: an outside kind's modules import this package's names

__all__ = ["DISTRIBUTED", "LOCAL", "Accepted", "ApiGet", "CollectorKind", "DistributedCampaigns",
           "LocalCampaigns", "Peers", "ProvisionError", "ReportItem", "Window", "collector_kind",
           "register_collector_kind", "unregister_collector_kind"]
