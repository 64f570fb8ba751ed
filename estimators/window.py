"""A window of one campaign: its estimate as JSON, made in one place, and the data a report shows.

:func:`window_estimate` is called by the collector's ``/estimate`` endpoint and by ``collector.reporting`` (which
fetches a report's data from a collector's database or HTTP API for ``ldp-telemetry report`` and the demo), so
the JSON of an estimate is the same whichever way it travels.  :class:`ReportData` is what that source hands to
the renderers (``estimators.report``).  No I/O here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import estimators
from client_sdk.spec import load_spec

from .estimates import Estimate
from .flags import with_flags


@dataclass(frozen=True)
class DailyResult:
    "One day's estimate of the same campaign (``day`` as an ISO date)"

    day: str
    result: dict

    @cached_property
    def estimate(self) -> Estimate:
        "The day's estimate, read once from ``result`` (its JSON) as its kind's"
        return Estimate.from_json(self.result)


@dataclass(frozen=True)
class ReportData:
    "Everything a report shows: the estimate, the window it covers, the campaign spec, per-day estimates"

    result: dict
    spec: dict | None = None
    since: str | None = None
    until: str | None = None
    daily: Sequence[DailyResult] = field(default_factory=tuple)
    truth: dict | float | None = None  # known ground truth (simulations, the demo): fractions by value, or a mean

    @cached_property
    def estimate(self) -> Estimate:
        "The estimate, read once from ``result`` (its JSON) as its kind's typed estimate (estimators.kinds)"
        return Estimate.from_json(self.result)

    @property
    def budget(self) -> dict | None:
        "The release ledger's figures for the campaign (``collector.release_ledger.budget_view``), None without them"
        budget = self.result.get("budget")
        return budget if isinstance(budget, dict) else None

    @property
    def kind(self) -> str:
        "frequency, mean, or what the estimator says (RAPPOR results: candidate frequency)"
        if self.estimate.kind:
            return self.estimate.kind
        return "candidate frequency" if self.estimate.mechanism == "rappor" else "unknown"

    @property
    def campaign(self) -> str:
        return str(self.estimate.campaign or (self.spec or {}).get("name") or "campaign")

    @property
    def n(self) -> int | None:
        return self.estimate.n


def window_estimate(spec: Any, aggregate: Any, confidence: float = 0.95) -> dict:
    """The JSON estimate of one window's merged aggregate, with its ``flags`` (``estimators.flags``); non-finite
    numbers become null (JSON has none).

    The one conversion from the estimator's object to JSON: ``/estimate`` answers this dict as it is, and a report
    reads it once into the kind's typed estimate (:attr:`ReportData.estimate`); no typed estimate is turned back
    into JSON.

    Raises :class:`estimators.NoReports` for an empty window."""
    spec = load_spec(spec)
    result = finite_json(estimators.estimate_aggregate(spec, aggregate, confidence=confidence).to_json())
    return with_flags(result, spec)


def finite_json(value: Any) -> Any:
    "``value`` with every NaN or infinity replaced by None"
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value


def daily_estimates(spec: Any, days: Sequence[tuple[str, Any]], confidence: float = 0.95) -> list[DailyResult]:
    "One estimate per day that has reports; none when the window is a single day"
    if len(days) <= 1:
        return []
    return [DailyResult(day, window_estimate(spec, aggregate, confidence)) for day, aggregate in days
            if aggregate.n > 0]
