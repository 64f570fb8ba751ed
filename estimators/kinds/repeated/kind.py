"""The repeated-collection kind, estimate side: a window's series of per-period estimates (:mod:`.estimate`), the
change between two of its periods, the central-DP baseline of one period, and the guarantee.

Its JSON (``RepeatedSeries.to_json``) is an estimate of the report schema's form for the latest period (``kind``
``mean`` with ``mean``/``std_error``/``ci_low``/``ci_high``, or ``frequency`` with one row per bucket) with
``trust`` ``repeated``, plus ``periods`` (each period's estimate in the same form, in time order), ``change`` and
``guarantee``.  The central baseline (``central_dp``, :mod:`estimators.central`) is what a trusted curator would
report for the latest period at the same epsilon, replace-one: unlike the memoized answers, it would spend that
epsilon again every period.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import client_sdk.kinds.repeated as device_side
from client_sdk.kinds.repeated import RepeatedParams

from ...central import central_block, histogram_sensitivity, mean_sensitivity
from ...errors import NoReports
from ...estimates import Estimate, ValueRow, is_number, parse_row
from ...window import DailyResult
from ..base import EstimateKind, register_estimate_kind
from .aggregate import PeriodAggregate
from .estimate import Change, PeriodEstimate, PeriodMean, estimate_change, estimate_series

GUARANTEE_TEXT = (device_side.__doc__ or "").split("The guarantee, exactly\n----------------------\n")[-1].strip()
STATEMENTS = (
    {"holds": "epsilon for all time for a device whose rounded value does not change",
     "assuming": "the device's state (alpha, sampled buckets, memoized answers) is kept"},
    {"holds": "at most D epsilon over a device's lifetime, D its distinct memoized answers (D <= s, or d + 1)",
     "assuming": "the device ledger charges each new memoized answer"},
)


@dataclass(frozen=True)
class RepeatedSeries:
    "A window's per-period estimates of one repeated campaign, the change between two periods, and the baseline"

    campaign: str
    params: RepeatedParams
    delta: float | None
    periods: tuple[tuple[str, PeriodEstimate], ...]
    change: tuple[str, str, Change] | None
    confidence: float

    def to_json(self) -> dict[str, Any]:
        label, latest = self.periods[-1]
        out: dict[str, Any] = {"trust": "repeated", "campaign": self.campaign, "mode": self.params.mode,
                               "epsilon": self.params.epsilon, "period": label, "period_unit": self.params.period,
                               **period_json(self.params, latest),
                               "periods": [{"period": period, **period_json(self.params, estimate)}
                                           for period, estimate in self.periods],
                               "central_dp": self.central(latest),
                               "guarantee": {"statements": list(STATEMENTS), "text": GUARANTEE_TEXT},
                               "lifetime_epsilon": self.params.lifetime_epsilon()}
        if self.change is not None:
            before, after, change = self.change
            out["change"] = {"before": before, "after": after, **change.to_json()}
        return out

    def central(self, latest: PeriodEstimate) -> dict:
        "The central baseline of one period at the campaign's epsilon (replace-one, n public)"
        params, n = self.params, latest.reports
        if isinstance(latest, PeriodMean):
            return central_block(sensitivity=mean_sensitivity(params.low, params.high, n), epsilon=params.epsilon,
                                 confidence=self.confidence, delta=self.delta,
                                 ldp_noise_std_error=latest.standard_error)
        rms = math.sqrt(float((latest.standard_errors ** 2).mean()))
        return central_block(sensitivity=histogram_sensitivity(n), epsilon=params.epsilon, confidence=self.confidence,
                             delta=self.delta, ldp_noise_std_error=rms)


def period_json(params: RepeatedParams, estimate: PeriodEstimate) -> dict[str, Any]:
    "One period's estimate in the report schema's form (mean, or one row per bucket), with ``n``"
    if isinstance(estimate, PeriodMean):
        return {"kind": "mean", "n": estimate.reports, "confidence": estimate.confidence, "mean": estimate.mean,
                "std_error": estimate.standard_error, "ci_low": estimate.interval[0],
                "ci_high": estimate.interval[1], "range": [params.low, params.high]}
    assert params.buckets is not None
    width = (params.high - params.low) / params.buckets
    rows = [{"value": f"[{params.low + j * width:g}, {params.low + (j + 1) * width:g})",
             "estimate": float(estimate.shares[j]), "std_error": float(estimate.standard_errors[j]),
             "ci_low": float(estimate.low[j]), "ci_high": float(estimate.high[j])} for j in range(params.buckets)]
    return {"kind": "frequency", "n": estimate.reports, "confidence": estimate.confidence, "values": rows}


@dataclass(frozen=True)
class PeriodPoint:
    "One period of the series as the reports read it: its mean and interval, or its per-bucket rows"

    period: str
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    values: tuple[ValueRow, ...]


@dataclass(frozen=True)
class PeriodChange:
    "The change of the mean between two periods, with its interval"

    before: str
    after: str
    difference: float | None
    interval: tuple[float | None, float | None]


@dataclass(frozen=True)
class RepeatedEstimate(Estimate):
    """A repeated campaign's estimate as the reports read it: the latest period's members (the base's), the mode,
    the period, the series, the change of the mean between two periods, the lifetime bound and the guarantee"""

    mode: str | None
    period: str | None  # the latest period's label
    period_unit: str | None
    lifetime_epsilon: float | None
    periods: tuple[PeriodPoint, ...]
    change: PeriodChange | None  # None for a frequency campaign's change (one difference per bucket)
    guarantee_text: str | None

    @classmethod
    def members(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        periods = data.get("periods")
        change, guarantee = data.get("change"), data.get("guarantee")
        text = guarantee.get("text") if isinstance(guarantee, Mapping) else None
        return {**super().members(data), "mode": _word(data.get("mode")), "period": _word(data.get("period")),
                "period_unit": _word(data.get("period_unit")), "lifetime_epsilon": _float(data.get("lifetime_epsilon")),
                "periods": tuple(_period(item) for item in periods if isinstance(item, Mapping))
                if isinstance(periods, list) else (),
                "change": _change(change) if isinstance(change, Mapping) and not isinstance(
                    change.get("difference"), list) else None,
                "guarantee_text": str(text) if text else None}


def _period(item: Mapping[str, Any]) -> PeriodPoint:
    rows = item.get("values")
    return PeriodPoint(str(item.get("period")), _float(item.get("mean")), _float(item.get("ci_low")),
                       _float(item.get("ci_high")),
                       tuple(row for row in (parse_row(raw, index) for index, raw in enumerate(rows))
                             if row is not None) if isinstance(rows, list) else ())


def _change(change: Mapping[str, Any]) -> PeriodChange:
    interval = change.get("interval")
    low, high = (list(interval) + [None, None])[:2] if isinstance(interval, Sequence) else (None, None)
    return PeriodChange(str(change.get("before")), str(change.get("after")), _float(change.get("difference")),
                        (_float(low), _float(high)))


def _float(value: Any) -> float | None:
    return float(value) if is_number(value) else None


def _word(value: Any) -> str | None:
    return None if value is None else str(value)


class RepeatedEstimates(EstimateKind):
    "``source``: the window's (period label, PeriodAggregate) pairs, any order"

    name = device_side.KIND_NAME

    def series(self, spec: Any, source: Sequence[tuple[str, PeriodAggregate]], confidence: float = 0.95,
               change: tuple[str, str] | None = None) -> RepeatedSeries:
        """The series, and the change between periods ``change`` (before, after; default: the last two);
        NoReports for a window without reports, KeyError for a change naming a period without any"""
        periods = tuple(estimate_series(list(source), confidence))
        if not periods:
            raise NoReports(f"campaign {spec.name!r} has no reports in this window")
        found = dict(periods)
        if change is None and len(periods) > 1:
            change = (periods[-2][0], periods[-1][0])
        difference = None
        if change is not None:
            before, after = change
            difference = (before, after, estimate_change(found[before], found[after], confidence))
        return RepeatedSeries(spec.name, spec.params, spec.delta, periods, difference, confidence)

    def estimate(self, spec: Any, source: Any, confidence: float = 0.95) -> Any:
        return self.series(spec, source, confidence)

    def read(self, data: Mapping[str, Any]) -> RepeatedEstimate:
        "The JSON of :meth:`estimate` (``RepeatedSeries.to_json``) as the reports read it"
        return RepeatedEstimate.read(data)

    def per_period(self, spec: Any, sources: Sequence[Any], confidence: float = 0.95) -> list[DailyResult]:
        "None: the series is the estimate's own ``periods``, drawn once by the kind's chart (with the central band)"
        return []


REPEATED_ESTIMATES = RepeatedEstimates()
register_estimate_kind(REPEATED_ESTIMATES)
