"""The distributed kind (Prio3), estimate side: the releases of a window added up and de-noised, with the local
and central trust models' standard errors beside."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import NoReports
from ..estimates import Estimate
from ..window import DailyResult, finite_json
from .base import EstimateKind, register_estimate_kind


class DistributedEstimates(EstimateKind):
    "Prio3 releases (``source``) with the aggregators' (or the devices' coins') noise: exact-quantile intervals"

    name = "prio3"

    def estimate(self, spec: Any, source: Any, confidence: float = 0.95) -> Estimate:
        "The estimate over the releases of a window (their batches added up); NoReports when there is none"
        if not source:
            raise NoReports("no release in this window")
        # imported here: the releases' estimator (accounting, noise) only for a distributed campaign's estimate, not
        # with every local report's start-up
        from ..distributed import estimate_releases

        return Estimate.from_json(finite_json(estimate_releases(spec, source, confidence)))

    def per_period(self, spec: Any, sources: Sequence[Any], confidence: float = 0.95) -> list[DailyResult]:
        "One estimate per batch; none when the window holds a single batch"
        if len(sources) <= 1:
            return []
        return [DailyResult(str(release.get("batch")), self.estimate(spec, [release], confidence).to_json())
                for release in sources]


DISTRIBUTED_ESTIMATES = register_estimate_kind(DistributedEstimates())
