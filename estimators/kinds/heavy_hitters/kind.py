"""The heavy_hitters kind, estimate side: a window's merged aggregate decoded into the report's shape.

The estimate (:class:`HeavyHittersWindow`) is the decoder's :class:`HeavyHittersEstimate` with its campaign: its
JSON has every report's common members (``values``: the discovered strings, ranked, each with its de-biased
frequency, standard error and interval from the estimation group) and the kind's section ``heavy_hitters`` (the
detection threshold at this n and epsilon, the expected false discoveries, the groups' reports and thresholds).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..base import EstimateKind, KindPlan, register_estimate_kind
from . import estimate_heavy_hitters
from .aggregate import PemAggregate, SfpAggregate
from .result import HeavyHittersEstimate

KIND = "heavy_hitters"


@dataclass(frozen=True)
class HeavyHittersWindow:
    "One window's heavy hitters of one campaign (``to_json``: the report's shape, estimators/report's schema)"

    campaign: str
    epsilon: float
    estimate: HeavyHittersEstimate

    @property
    def estimation_reports(self) -> int:
        "The reports of the estimation group: the ones every frequency, SE and interval comes from"
        return self.estimate.reports - sum(level.reports for level in self.estimate.levels)

    def to_json(self) -> dict:
        estimate = self.estimate
        rows = [{"value": hitter.value, "estimate": hitter.frequency, "std_error": hitter.standard_error,
                 "ci_low": hitter.ci_low, "ci_high": hitter.ci_high} for hitter in estimate.hitters]
        section = {key: value for key, value in estimate.to_json().items() if key not in ("kind", "reports")}
        section["estimation_reports"] = self.estimation_reports
        return {"trust": "local", "kind": KIND, "campaign": self.campaign,
                "mechanism": f"heavy_hitters ({estimate.algorithm})", "epsilon": self.epsilon, "n": estimate.reports,
                "confidence": estimate.confidence, "values": rows, "heavy_hitters": section}


class HeavyHittersEstimates(EstimateKind):
    "``source``: the window's merged aggregate (PemAggregate or SfpAggregate)"

    name = KIND

    def plan(self, spec: Any, n: int, question: Mapping[str, Any]) -> KindPlan:
        "The detection threshold at n, and the n each of ``question['frequencies']`` needs"
        # imported here: the planner is only for `ldp-telemetry plan`
        from .planner import plan_heavy_hitters

        return plan_heavy_hitters(spec, n, tuple(question.get("frequencies") or ()))

    def estimate(self, spec: Any, source: Any, confidence: float = 0.95) -> HeavyHittersWindow:  # type: ignore[override]
        "The discovered strings of the window; NoReports when it holds none"
        assert isinstance(source, (PemAggregate, SfpAggregate))
        result = estimate_heavy_hitters(spec.params, source, confidence=confidence)
        return HeavyHittersWindow(spec.name, spec.epsilon, result)

    def per_period(self, spec: Any, sources: Sequence[Any], confidence: float = 0.95) -> list:
        "None: each day's discovery would be a decode of its own (the window's list is the one reported)"
        return []


HEAVY_HITTERS_ESTIMATES = register_estimate_kind(HeavyHittersEstimates())
