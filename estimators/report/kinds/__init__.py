"""Campaign kinds, report side: the registry (:mod:`.base`) and the two built-in kinds' headers, captions and
comparison figures.  docs/architecture.md ("Adding a campaign kind") lists the modules a kind has on each side."""

from .base import GENERIC, ReportKind, register_report_kind, report_kind, unregister_report_kind
from .distributed import DISTRIBUTED_REPORT, DistributedReport
from .heavy_hitters import HEAVY_HITTERS_REPORT, HeavyHittersReport
from .local import LOCAL_REPORT, LocalReport
from .poplar1 import POPLAR1_REPORT, Poplar1Report
from .quantiles import QUANTILES_REPORT, QuantilesReport
from .repeated import REPEATED_REPORT, RepeatedReport

__all__ = ["DISTRIBUTED_REPORT", "GENERIC", "HEAVY_HITTERS_REPORT", "LOCAL_REPORT", "POPLAR1_REPORT",
           "QUANTILES_REPORT", "REPEATED_REPORT", "DistributedReport", "HeavyHittersReport", "LocalReport",
           "Poplar1Report", "QuantilesReport", "RepeatedReport", "ReportKind",
           "register_report_kind", "report_kind", "unregister_report_kind"]
