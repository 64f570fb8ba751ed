"""The prio3 kind under its former module name (``client_sdk.kinds.prio3``)."""

from .prio3 import PRIO3, Prio3Kind

DISTRIBUTED = PRIO3
DistributedKind = Prio3Kind

__all__ = ["DISTRIBUTED", "DistributedKind"]
