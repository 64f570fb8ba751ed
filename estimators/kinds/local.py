"""The local-DP kind, estimate side: a window's merged aggregate de-biased by the campaign's mechanism."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..estimates import Estimate
from ..window import DailyResult, daily_estimates, window_estimate
from .base import EstimateKind, register_estimate_kind


class LocalEstimates(EstimateKind):
    "Local differential privacy: the estimate of a merged aggregate (``source``), its intervals the mechanism's"

    name = "local"

    def estimate(self, spec: Any, source: Any, confidence: float = 0.95) -> Estimate:
        return Estimate.from_json(window_estimate(spec, source, confidence))

    def per_period(self, spec: Any, sources: Sequence[Any], confidence: float = 0.95) -> list[DailyResult]:
        "One estimate per day (``sources``: (day, aggregate) pairs) that has reports; none for a single day"
        return daily_estimates(spec, sources, confidence)


LOCAL_ESTIMATES = register_estimate_kind(LocalEstimates())
