"""The quantiles campaign kind, device side (standard library only): a bounded number's distribution as a
hierarchical histogram (Kulkarni, Cormode, Srivastava, VLDB 2019), each report one level's node perturbed by OLH
or Hadamard at the full epsilon.

:mod:`.params` parses and describes the kind's fields, :mod:`.tree` holds the tree and the branching factor's
choice, :mod:`.device` makes and checks reports.  The estimate side is ``estimators.kinds.quantiles``."""

from .params import (
    AUTO,
    BUCKETINGS,
    FIELDS,
    KIND_NAME,
    MAX_BRANCHING,
    MAX_BUCKETS,
    ORACLES,
    QuantilesParams,
    bucket_boundaries,
    json_schema,
    parse_params,
)
from .tree import MAX_LEAVES, adjoint, best_branching, consistent_levels, range_variance_factor, tree_height

# Function-level imports: .device builds each level's oracle from a local spec (client_sdk.spec, which imports
# client_sdk.kinds and with it
# this package's kind module): its names are loaded on first use, after the spec module finished loading.
_DEVICE_NAMES = frozenset({"CLAMPED", "QuantilesReport", "bucket_of", "check_payload", "clamp", "level_oracle",
                           "level_spec", "make_report", "node_of", "prio3_measurement"})
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from .device import (
        CLAMPED,
        QuantilesReport,
        bucket_of,
        check_payload,
        clamp,
        level_oracle,
        level_spec,
        make_report,
        node_of,
        prio3_measurement,
    )


def __getattr__(name: str) -> object:
    if name in _DEVICE_NAMES:
        from . import device

        return getattr(device, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "AUTO", "BUCKETINGS", "CLAMPED", "FIELDS", "KIND_NAME", "MAX_BRANCHING", "MAX_BUCKETS", "MAX_LEAVES", "ORACLES",
    "QuantilesParams", "QuantilesReport", "adjoint", "best_branching", "bucket_boundaries", "bucket_of",
    "check_payload", "clamp", "consistent_levels", "json_schema", "level_oracle", "level_spec", "make_report",
    "node_of", "parse_params", "prio3_measurement", "range_variance_factor", "tree_height",
]
