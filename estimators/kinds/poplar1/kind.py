"""The poplar1 kind, estimate side: a walk's release estimated (``estimate.estimate_walk``) and its JSON read as
:class:`Poplar1Walk`, the type the report side lays out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...estimates import Estimate, is_number
from ..base import EstimateKind, register_estimate_kind

KIND = "poplar1"


@dataclass(frozen=True)
class Poplar1Walk(Estimate):
    """One batch's walk as the reports read it: the heavy hitters' counts, every level, the noise, the guarantee
    and what the leader learned (the JSON's members, typed where a renderer computes with them)"""

    batch: str | None
    threshold: float | None
    threshold_count: float | None
    pruning: Mapping[str, Any]
    heavy_hitters: tuple[Mapping[str, Any], ...]
    levels: tuple[Mapping[str, Any], ...]
    noise: Mapping[str, Any]
    guarantee: Mapping[str, Any]
    leader_learned: Mapping[str, Any]
    rejected: Mapping[str, int]
    stopped: Mapping[str, Any]  # why the walk ended after its first level (empty: it did not)

    @classmethod
    def members(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        def section(name: str) -> Mapping[str, Any]:
            value = data.get(name)
            return value if isinstance(value, Mapping) else {}

        def rows(name: str) -> tuple[Mapping[str, Any], ...]:
            value = data.get(name)
            return tuple(row for row in value if isinstance(row, Mapping)) if isinstance(value, list) else ()

        threshold, count, batch = data.get("threshold"), data.get("threshold_count"), data.get("batch")
        return {**super().members(data), "batch": batch if isinstance(batch, str) else None,
                "threshold": float(threshold) if is_number(threshold) else None,
                "threshold_count": float(count) if is_number(count) else None,
                "pruning": section("pruning"),
                "heavy_hitters": rows("heavy_hitters"), "levels": rows("levels"), "noise": section("noise"),
                "guarantee": section("guarantee"), "leader_learned": section("leader_learned"),
                "rejected": {str(k): int(v) for k, v in section("rejected").items() if is_number(v)},
                "stopped": section("stopped")}


class Poplar1Estimates(EstimateKind):
    "``source``: one stored walk release (the leader's ``dist_releases`` row: its ``walk`` and ``rejections``)"

    name = KIND

    def read(self, data: Mapping[str, Any]) -> Poplar1Walk:
        return Poplar1Walk.read(data)

    def estimate(self, spec: Any, source: Any, confidence: float = 0.95) -> Poplar1Walk:
        return self.read(self.estimate_json(spec, source, confidence))

    def estimate_json(self, spec: Any, source: Any, confidence: float = 0.95) -> dict:
        "The walk's estimate at ``confidence`` (the stored release keeps the noisy counts, not the intervals)"
        # imported here: the accounting (dp-accounting) loads with an estimate, not with the registry
        from .estimate import estimate_walk

        return estimate_walk(spec, source["walk"], confidence, source.get("rejections"))


POPLAR1_ESTIMATES = register_estimate_kind(Poplar1Estimates())
