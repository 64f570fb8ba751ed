"""The heavy_hitters kind, estimate side: mergeable aggregates of its reports and the PEM and SFP decoders.

``estimate_heavy_hitters(params, aggregate)`` dispatches on the campaign's algorithm; the device side (parameters,
reports, planner) is ``client_sdk.kinds.heavy_hitters``.
"""

from __future__ import annotations

from client_sdk.kinds.heavy_hitters import HeavyHittersParams
from client_sdk.kinds.heavy_hitters.planning import DEFAULT_FALSE_DISCOVERY_BUDGET, DEFAULT_TOP_K

from .aggregate import PemAggregate, SfpAggregate, aggregate_json, empty_aggregate
from .pem import decode_pem
from .result import INTERVAL_SOURCE, HeavyHitter, HeavyHittersEstimate, LevelSummary
from .sfp import decode_sfp
from .simulate import simulate_aggregate


def estimate_heavy_hitters(params: HeavyHittersParams, aggregate: PemAggregate | SfpAggregate,
                           top_k: int = DEFAULT_TOP_K, budget: float = DEFAULT_FALSE_DISCOVERY_BUDGET,
                           confidence: float = 0.95) -> HeavyHittersEstimate:
    """The discovered strings of a window's aggregate, ranked, each with frequency, SE and interval from the
    estimation group; ``top_k`` the candidates a level keeps, ``budget`` the expected frequency-0 candidates a
    level passes (``planning``)"""
    if params.algorithm == "pem":
        assert isinstance(aggregate, PemAggregate)
        return decode_pem(params, aggregate, top_k, budget, confidence)
    assert isinstance(aggregate, SfpAggregate)
    return decode_sfp(params, aggregate, top_k, budget, confidence)


__all__ = ["INTERVAL_SOURCE", "HeavyHitter", "HeavyHittersEstimate", "LevelSummary", "PemAggregate", "SfpAggregate",
           "aggregate_json", "decode_pem", "decode_sfp", "empty_aggregate", "estimate_heavy_hitters",
           "simulate_aggregate"]
