"""Mergeable sufficient statistics: every mechanism's aggregate is a vector of sums over reports.

``aggregate(spec, reports)`` computes it for a batch (vectorised, no Python loop over reports), ``a.merge(b)``
adds two, and the estimators need nothing else.  That is what lets the collector update an aggregate in the
same transaction as the insert, and lets aggregates from shards or days be added.  What the statistic of each
mechanism is, is written in its server module (``estimators.mechanisms``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from client_sdk.errors import PayloadError
from client_sdk.spec import load_spec

from .errors import AggregateMismatch
from .mechanisms.base import SMALL_BATCH, ServerMechanism
from .registry import ReportBatch, mechanism_for, registered


@dataclass
class Aggregate:
    "The sufficient statistic of ``n`` reports made under the spec with ``fingerprint``"

    mechanism: str
    fingerprint: str
    n: int
    counts: np.ndarray

    @classmethod
    def empty(cls, spec: Any) -> Aggregate:
        spec = load_spec(spec)
        return cls(spec.mechanism, spec.fingerprint, 0, mechanism_for(spec).zeros())

    def merge(self, other: Aggregate) -> Aggregate:
        if (self.mechanism, self.fingerprint) != (other.mechanism, other.fingerprint):
            raise AggregateMismatch(f"cannot merge aggregates of {self.fingerprint} and {other.fingerprint}")
        if self.counts.shape != other.counts.shape:  # numpy would broadcast a (1,) array silently
            raise AggregateMismatch(f"cannot merge counts of shape {self.counts.shape} and {other.counts.shape}")
        return Aggregate(self.mechanism, self.fingerprint, self.n + other.n, self.counts + other.counts)

    def to_dict(self) -> dict:
        # int64 arrays: tolist() gives Python ints in C (the collector converts an aggregate at every insert)
        counts = _to_python(self.counts) if self.counts.dtype == object else self.counts.tolist()
        return {"mechanism": self.mechanism, "fingerprint": self.fingerprint, "n": int(self.n), "counts": counts}

    @classmethod
    def from_dict(cls, data: dict) -> Aggregate:
        counts = registered(data["mechanism"]).counts_from_json(data["counts"])
        return cls(data["mechanism"], data["fingerprint"], int(data["n"]), counts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Aggregate):
            return NotImplemented
        return (self.mechanism, self.fingerprint, self.n) == (other.mechanism, other.fingerprint, other.n) and \
            self.counts.shape == other.counts.shape and bool(np.all(self.counts == other.counts))


def aggregate(spec: Any, reports: ReportBatch | Sequence[Any]) -> Aggregate:
    """The aggregate of a batch, or of a list of JSON payloads (each checked with the mechanism's
    ``check_payload``: PayloadError names the first bad one).  ``spec`` is a Spec, dict or JSON string."""
    spec = load_spec(spec)
    server = mechanism_for(spec)
    if not isinstance(reports, ReportBatch) and 0 < len(reports) <= SMALL_BATCH:
        counts = _small_statistic(server, reports)
        if counts is not None:
            return Aggregate(spec.mechanism, spec.fingerprint, len(reports), counts)
    batch = reports if isinstance(reports, ReportBatch) else server.parse(reports)
    if batch.mechanism != spec.mechanism:
        raise AggregateMismatch(f"batch of {batch.mechanism!r} reports for a {spec.mechanism!r} spec")
    return Aggregate(spec.mechanism, spec.fingerprint, batch.n, server.statistic(batch))


def _small_statistic(server: ServerMechanism, payloads: Sequence[Any]) -> np.ndarray | None:
    "The mechanism's statistic of a few payloads summed in Python (each checked first, as ``parse`` does), or None"
    if type(server).small_statistic is ServerMechanism.small_statistic:
        return None
    for index, payload in enumerate(payloads):
        try:
            server.check_payload(payload)
        except PayloadError as error:
            raise PayloadError(f"payloads[{index}]{error.field[len('payload'):]}", error.reason) from None
    return server.small_statistic(payloads)


def merge(a: Aggregate, b: Aggregate) -> Aggregate:
    return a.merge(b)


def _to_python(counts: np.ndarray) -> list:
    return [_to_python(row) for row in counts] if counts.ndim > 1 else [int(c) for c in counts]


__all__ = ["Aggregate", "AggregateMismatch", "aggregate", "merge"]
