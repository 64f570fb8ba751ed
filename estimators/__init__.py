"""ldp-telemetry estimators: de-bias aggregated reports into frequencies and means with error bars.

``estimate(spec, payloads)`` is the one-call entry point; the pieces are ``aggregate`` (a mergeable sufficient
statistic), ``estimate_aggregate`` (de-bias it), ``simulate`` (a vectorised simulator with the SDK's
distribution) and ``plan`` (expected errors before collecting anything).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from client_sdk.spec import Spec, load_spec

from .aggregation import Aggregate, AggregateMismatch, aggregate, merge
from .batch import ReportBatch, parse_payloads
from .errors import NoReports
from .frequency import FrequencyEstimate, estimate_frequencies
from .means import MeanEstimate, estimate_mean

Estimate = FrequencyEstimate | MeanEstimate | Any


def estimate_aggregate(spec: Any, aggregate_: Aggregate, *, confidence: float = 0.95,
                       delta: float | None = None) -> Estimate:
    "De-bias an aggregate of ``spec``'s reports; ``.to_dict()`` of the result is plain JSON"
    spec = load_spec(spec)
    if not 0 < confidence < 1:
        raise ValueError("confidence must be strictly between 0 and 1")
    if aggregate_.fingerprint != spec.fingerprint:
        raise AggregateMismatch("the aggregate was made under another spec (fingerprints differ)")
    if spec.is_categorical:
        return estimate_frequencies(spec, aggregate_, confidence=confidence, delta=delta)
    if spec.is_numeric:
        return estimate_mean(spec, aggregate_, confidence=confidence, delta=delta)
    from .rappor import estimate_rappor

    return estimate_rappor(spec, aggregate_, confidence=confidence)


def estimate(spec: Any, payloads: ReportBatch | Sequence[Any], *, confidence: float = 0.95,
             delta: float | None = None) -> Estimate:
    "Aggregate ``payloads`` (JSON payloads or a ReportBatch) and de-bias them"
    spec = load_spec(spec)
    return estimate_aggregate(spec, aggregate(spec, payloads), confidence=confidence, delta=delta)


__all__ = [
    "Aggregate", "AggregateMismatch", "Estimate", "FrequencyEstimate", "MeanEstimate", "NoReports", "ReportBatch",
    "Spec", "aggregate", "estimate", "estimate_aggregate", "merge", "parse_payloads",
]
