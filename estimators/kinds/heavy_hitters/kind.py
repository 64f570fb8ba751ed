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

from ...estimates import Estimate, is_number
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


@dataclass(frozen=True)
class HeavyHittersFound(Estimate):
    """A heavy-hitters estimate as the reports read it: the ranked strings (``values``) and the JSON's
    ``heavy_hitters`` section (the algorithm, the detection threshold, the expected false discoveries, where the
    intervals come from and from how many reports)"""

    algorithm: str | None
    detection_threshold: float | None
    expected_false_discoveries: float | None
    interval_source: str | None
    estimation_reports: int | None

    @classmethod
    def members(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        found = data.get("heavy_hitters")
        section: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        threshold, false, reports = (section.get(key) for key in
                                     ("detection_threshold", "expected_false_discoveries", "estimation_reports"))
        algorithm, source = section.get("algorithm"), section.get("interval_source")
        return {**super().members(data), "algorithm": str(algorithm) if algorithm is not None else None,
                "detection_threshold": threshold if is_number(threshold) else None,
                "expected_false_discoveries": false if is_number(false) else None,
                "interval_source": str(source) if source else None,
                "estimation_reports": reports if is_number(reports) and isinstance(reports, int) else None}


class HeavyHittersEstimates(EstimateKind):
    "``source``: the window's merged aggregate (PemAggregate or SfpAggregate)"

    name = KIND

    def read(self, data: Mapping[str, Any]) -> HeavyHittersFound:
        "The JSON of :meth:`estimate` as the reports read it"
        return HeavyHittersFound.read(data)

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
