"""The quantiles kind, estimate side: a window's merged :class:`~.aggregate.QuantilesAggregate` estimated as
:class:`~.estimate.QuantilesEstimate` (its own typed estimate), with the central-DP and mean-mechanism answers to
the same questions beside it (:mod:`.baselines`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from estimators.window import DailyResult, finite_json

from ..base import EstimateKind, KindPlan, register_estimate_kind
from .aggregate import QuantilesAggregate
from .baselines import central_quantiles, mean_mechanism
from .estimate import DEFAULT_QUANTILES, QuantilesEstimate, estimate_quantiles
from .planner import plan_quantiles


class QuantilesEstimates(EstimateKind):
    "The consistent tree's CDF, band, histogram, quantiles and mean, each with its interval"

    name = "quantiles"

    def estimate(self, spec: Any, source: Any, confidence: float = 0.95,  # type: ignore[override]
                 quantiles: tuple[float, ...] = DEFAULT_QUANTILES) -> QuantilesEstimate:
        """The estimate of ``source`` (the window's merged aggregate); NoReports for an empty one.  Its
        ``to_json()`` carries ``campaign``, ``trust``, ``central_dp`` and ``mean_mechanism`` too"""
        aggregate: QuantilesAggregate = source
        result = estimate_quantiles(spec.params, aggregate, confidence=confidence, quantiles=quantiles)
        result.extra.update({"campaign": spec.name, "trust": spec.trust, "mechanism": spec.params.oracle,
                             "unit": spec.unit})
        result.extra["central_dp"] = central_quantiles(result, spec.delta)
        result.extra["mean_mechanism"] = mean_mechanism(result)
        return result

    def per_period(self, spec: Any, sources: Sequence[Any], confidence: float = 0.95) -> list[DailyResult]:
        "One estimate per day (``sources``: (day, aggregate) pairs) that has reports; none for a single day"
        if len(sources) <= 1:
            return []
        return [DailyResult(day, finite_json(self.estimate(spec, aggregate, confidence).to_json()))
                for day, aggregate in sources if aggregate.n > 0]


    def plan(self, spec: Any, n: int, question: Mapping[str, Any]) -> KindPlan:
        """Each quantile's assumed value and interval half-width at n in value units, and the n for
        ``target_halfwidth`` (``question``: quantiles, assume, share, confidence)"""
        return plan_quantiles(spec, n, question)


QUANTILES_ESTIMATES = register_estimate_kind(QuantilesEstimates())
