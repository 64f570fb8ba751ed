"""Campaign kinds, estimate side: the registry (:mod:`.base`) and the two built-in kinds.

docs/architecture.md ("Adding a campaign kind") lists the modules a kind has on each side."""

from .base import EstimateKind, estimate_kind, register_estimate_kind, unregister_estimate_kind
from .distributed import DISTRIBUTED_ESTIMATES, DistributedEstimates
from .heavy_hitters.kind import HEAVY_HITTERS_ESTIMATES, HeavyHittersEstimates
from .local import LOCAL_ESTIMATES, LocalEstimates
from .poplar1.kind import POPLAR1_ESTIMATES, Poplar1Estimates
from .quantiles.kind import QUANTILES_ESTIMATES, QuantilesEstimates
from .repeated.kind import REPEATED_ESTIMATES, RepeatedEstimates

__all__ = ["DISTRIBUTED_ESTIMATES", "HEAVY_HITTERS_ESTIMATES", "LOCAL_ESTIMATES", "POPLAR1_ESTIMATES",
           "QUANTILES_ESTIMATES", "REPEATED_ESTIMATES", "DistributedEstimates", "EstimateKind", "HeavyHittersEstimates",
           "LocalEstimates", "Poplar1Estimates", "QuantilesEstimates", "RepeatedEstimates", "estimate_kind",
           "register_estimate_kind", "unregister_estimate_kind"]
