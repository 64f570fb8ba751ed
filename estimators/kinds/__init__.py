"""Campaign kinds, estimate side: the registry (:mod:`.base`) and the two built-in kinds.

docs/architecture.md ("Adding a campaign kind") lists the modules a kind has on each side."""

from .base import EstimateKind, estimate_kind, register_estimate_kind, unregister_estimate_kind
from .distributed import DISTRIBUTED_ESTIMATES, DistributedEstimates
from .local import LOCAL_ESTIMATES, LocalEstimates
from .quantiles.kind import QUANTILES_ESTIMATES, QuantilesEstimates

__all__ = ["DISTRIBUTED_ESTIMATES", "LOCAL_ESTIMATES", "DistributedEstimates", "EstimateKind", "LocalEstimates",
           "QUANTILES_ESTIMATES", "QuantilesEstimates",
           "estimate_kind", "register_estimate_kind", "unregister_estimate_kind"]
