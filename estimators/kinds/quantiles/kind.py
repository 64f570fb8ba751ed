"""The quantiles kind, estimate side: a window's merged :class:`~.aggregate.QuantilesAggregate` estimated as
:class:`~.estimate.QuantilesEstimate` (its own typed estimate), with the central-DP and mean-mechanism answers to
the same questions beside it (:mod:`.baselines`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from estimators.estimates import Estimate, is_number
from estimators.window import DailyResult, finite_json

from ..base import EstimateKind, KindPlan, register_estimate_kind
from .aggregate import QuantilesAggregate
from .baselines import central_quantiles, mean_mechanism
from .estimate import DEFAULT_QUANTILES, QuantilesEstimate, estimate_quantiles
from .planner import plan_quantiles


@dataclass(frozen=True)
class QuantileInterval:
    "The p-quantile's estimate and interval (in the values' unit); a curator's has no estimate (nan)"

    p: float
    estimate: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class CdfPoint:
    "The CDF at one bucket boundary, its pointwise interval and the simultaneous band"

    boundary: float
    cdf: float
    ci_low: float
    ci_high: float
    band_low: float
    band_high: float


@dataclass(frozen=True)
class HistogramBar:
    "One bucket [low, high): its share and interval"

    low: float
    high: float
    estimate: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class MeanMechanismInterval:
    "What a local mean mechanism at the same epsilon over the range would give (``mean_mechanism``)"

    mechanism: str | None
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class QuantilesDistribution(Estimate):
    """A quantiles estimate as the reports read it: the tree's parameters, the quantiles with their intervals (and
    a trusted curator's), the CDF with its band, the histogram, and the mean two ways"""

    oracle: str | None
    bucketing: str | None
    range: tuple[float | None, float | None]
    buckets: int | None  # the derived count (a geometric spec states its growth only)
    branching: int | None
    height: int | None
    quantiles: tuple[QuantileInterval, ...]
    central_quantiles: tuple[QuantileInterval, ...]
    cdf: tuple[CdfPoint, ...]
    histogram: tuple[HistogramBar, ...]
    band_critical: float | None
    mean: float | None
    ci_low: float | None  # the mean's
    ci_high: float | None
    mean_mechanism: MeanMechanismInterval | None
    # trust "distributed": per quantile, the value interval under each trust model ({"local": (low, high), ...})
    model_intervals: tuple[tuple[float, Mapping[str, tuple[float | None, float | None]]], ...] = ()

    @classmethod
    def members(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        params, derived = _block(data, "params"), _block(data, "derived")
        bounds = params.get("range")
        low, high = (list(bounds) + [None, None])[:2] if isinstance(bounds, Sequence) else (None, None)
        mechanism = data.get("mean_mechanism")
        nan = float("nan")
        return {
            **super().members(data),
            "oracle": _word(params.get("oracle")), "bucketing": _word(params.get("bucketing")),
            "range": (_float(low), _float(high)),
            "buckets": _integer(derived.get("buckets", params.get("buckets"))),
            "branching": _integer(derived.get("branching")), "height": _integer(derived.get("height")),
            "quantiles": _rows(data.get("quantiles"), QuantileInterval, ("p", "estimate", "ci_low", "ci_high")),
            "central_quantiles": tuple(QuantileInterval(row.p, nan, row.ci_low, row.ci_high) for row in _rows(
                _block(data, "central_dp").get("quantiles"), _CentralRow, ("p", "ci_low", "ci_high"))),
            "cdf": _rows(data.get("cdf"), CdfPoint, ("boundary", "cdf", "ci_low", "ci_high", "band_low", "band_high")),
            "histogram": _rows(data.get("histogram"), HistogramBar, ("low", "high", "estimate", "ci_low", "ci_high")),
            "band_critical": _float(_block(data, "band").get("critical")),
            "mean": _float(data.get("mean")), "ci_low": _float(data.get("ci_low")),
            "ci_high": _float(data.get("ci_high")),
            "mean_mechanism": MeanMechanismInterval(
                _word(mechanism.get("mechanism")), _float(mechanism.get("ci_low")), _float(mechanism.get("ci_high")))
            if isinstance(mechanism, Mapping) and mechanism else None,
            "model_intervals": _model_intervals(_block(data, "trust_models").get("quantiles")),
        }


def _model_intervals(raw: Any) -> tuple:
    "A distributed estimate's ``trust_models.quantiles`` rows: (p, {model: (ci_low, ci_high)})"
    if not isinstance(raw, Sequence):
        return ()
    out = []
    for row in raw:
        p = _float(row.get("p")) if isinstance(row, Mapping) else None
        if p is None:
            continue
        out.append((p, MappingProxyType({model: (_float(row[model].get("ci_low")), _float(row[model].get("ci_high")))
                                         for model in ("local", "distributed", "central")
                                         if isinstance(row.get(model), Mapping)})))
    return tuple(out)


@dataclass(frozen=True)
class _CentralRow:
    p: float
    ci_low: float
    ci_high: float


def _block(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    block = data.get(key)
    return block if isinstance(block, Mapping) else {}


def _rows(raw: Any, row: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    "The rows of ``raw`` (a list of objects) with every one of ``names`` a number, as ``row``"
    items = raw if isinstance(raw, list) else []
    return tuple(row(*(float(item[name]) for name in names)) for item in items
                 if isinstance(item, Mapping) and all(is_number(item.get(name)) for name in names))


def _float(value: Any) -> float | None:
    return float(value) if is_number(value) else None


def _integer(value: Any) -> int | None:
    return value if is_number(value) and isinstance(value, int) else None


def _word(value: Any) -> str | None:
    return None if value is None else str(value)


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

    def read(self, data: Mapping[str, Any]) -> QuantilesDistribution:
        "The JSON of :meth:`estimate` (``to_json()``) as the reports read it"
        return QuantilesDistribution.read(data)

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
