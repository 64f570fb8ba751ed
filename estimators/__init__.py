"""ldp-telemetry estimators: de-bias aggregated reports into frequencies and means with error bars.

``estimate(spec, payloads)`` is the one-call entry point; the pieces are ``aggregate`` (a mergeable sufficient
statistic), ``estimate_aggregate`` (de-bias it), ``simulate`` (a vectorised simulator with the SDK's
distribution) and ``plan`` (expected errors before collecting anything).  Each mechanism's server side (payload
parsing and checking, statistic, simulator, variance, estimator) is one entry of ``estimators.mechanisms``,
found with ``mechanism_for(spec)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from client_sdk.spec import Spec, load_spec

from .aggregation import Aggregate, aggregate, merge
from .batch import ReportBatch, parse_payloads
from .errors import AggregateMismatch, CandidatesRequired, EstimatorError, NoReports
from .frequency import FrequencyEstimate
from .means import MeanEstimate
from .mechanisms import mechanism_for

Estimate = FrequencyEstimate | MeanEstimate | Any


def estimate_aggregate(spec: Any, aggregate_: Aggregate, *, confidence: float = 0.95,
                       delta: float | None = None) -> Estimate:
    "De-bias an aggregate of ``spec``'s reports; ``.to_dict()`` of the result is plain JSON"
    spec = load_spec(spec)
    if not 0 < confidence < 1:
        raise ValueError("confidence must be strictly between 0 and 1")
    if aggregate_.fingerprint != spec.fingerprint:
        raise AggregateMismatch("the aggregate was made under another spec (fingerprints differ)")
    return mechanism_for(spec).estimate(aggregate_, confidence=confidence, delta=delta)


def estimate(spec: Any, payloads: ReportBatch | Sequence[Any], *, confidence: float = 0.95,
             delta: float | None = None) -> Estimate:
    "Aggregate ``payloads`` (JSON payloads, each checked as the collector checks it, or a ReportBatch); de-bias"
    spec = load_spec(spec)
    return estimate_aggregate(spec, aggregate(spec, payloads), confidence=confidence, delta=delta)


__all__ = [
    "Aggregate", "AggregateMismatch", "CandidatesRequired", "Estimate", "EstimatorError", "FrequencyEstimate",
    "MeanEstimate", "NoReports", "ReportBatch", "Spec", "aggregate", "estimate", "estimate_aggregate", "mechanism_for",
    "merge", "parse_payloads",
]
