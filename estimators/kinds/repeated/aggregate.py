"""One period's sufficient statistic of a repeated-collection campaign: sums, so merging is adding.

=========  =======================================================================================
mean       ``reports`` n and ``ones``: how many sent bits were 1
histogram  ``reports`` n, and per bucket ``sampled`` (reports that carry a bit for it) and ``ones``
=========  =======================================================================================

Payloads are checked one by one with the shared codec (``client_sdk.kinds.repeated.check_payload``) and counted with
numpy; a simulation (:mod:`.simulate`) adds its arrays directly (:meth:`PeriodAggregate.add_arrays`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from client_sdk.errors import PayloadError
from client_sdk.kinds.repeated import RepeatedParams, check_payload

from ...errors import AggregateMismatch


@dataclass
class PeriodAggregate:
    """The counts of one period (or of several merged: any sum of reports)

    ``sampled`` and ``ones`` are int64 arrays of k buckets (histogram) or of one element (mean: ``sampled`` holds
    the reports)."""

    params: RepeatedParams
    reports: int = 0
    sampled: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    ones: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def __post_init__(self) -> None:
        width = self.params.buckets if self.params.mode == "histogram" else 1
        assert width is not None
        if self.sampled.size == 0:
            self.sampled = np.zeros(width, np.int64)
        if self.ones.size == 0:
            self.ones = np.zeros(width, np.int64)
        if self.sampled.shape != (width,) or self.ones.shape != (width,):
            raise AggregateMismatch(f"an aggregate of this campaign holds {width} counts")

    def add(self, payloads: Iterable[Any]) -> PeriodAggregate:
        "Count valid payloads (PayloadError naming the field and the index at the first invalid one); returns self"
        buckets, bits = [], []
        for index, payload in enumerate(payloads):
            try:
                chosen, sent = check_payload(self.params, payload)
            except PayloadError as error:
                raise PayloadError(f"payloads[{index}].{error.field}", error.reason) from None
            buckets.append(chosen)
            bits.append(sent)
        if not bits:
            return self
        width = self.params.bits if self.params.mode == "histogram" and self.params.bits else 1
        bit_array = np.asarray(bits, dtype=np.int64).reshape(-1, width)
        bucket_array = np.asarray(buckets, dtype=np.int64).reshape(-1, width) if self.params.mode == "histogram" \
            else np.zeros_like(bit_array)
        return self.add_arrays(bucket_array, bit_array)

    def add_arrays(self, buckets: np.ndarray | None, bits: np.ndarray) -> PeriodAggregate:
        """Count reports given as arrays (already valid): ``bits`` of shape (n,) (mean) or (n, d) with their
        ``buckets`` (n, d) (histogram; None for mean); returns self"""
        bits = np.asarray(bits)
        if self.params.mode == "mean":
            self.reports += int(bits.shape[0])
            self.sampled[0] += int(bits.shape[0])
            self.ones[0] += int(np.count_nonzero(bits))
            return self
        assert buckets is not None and self.params.buckets is not None
        buckets = np.asarray(buckets)
        self.reports += int(bits.shape[0])
        self.sampled += np.bincount(buckets.ravel(), minlength=self.params.buckets).astype(np.int64)
        self.ones += np.bincount(buckets.ravel(), weights=bits.ravel().astype(np.float64),
                                 minlength=self.params.buckets).astype(np.int64)
        return self

    def merge(self, other: PeriodAggregate) -> PeriodAggregate:
        "A new aggregate of both (AggregateMismatch for another campaign's)"
        if other.params != self.params:
            raise AggregateMismatch("aggregates of different repeated-collection campaigns")
        return PeriodAggregate(self.params, self.reports + other.reports, self.sampled + other.sampled,
                               self.ones + other.ones)

    def to_json(self) -> dict[str, Any]:
        "The counts as JSON (:func:`aggregate_from_json` reads them back with the campaign's params)"
        if self.params.mode == "mean":
            return {"reports": self.reports, "ones": int(self.ones[0])}
        return {"reports": self.reports, "sampled": self.sampled.tolist(), "ones": self.ones.tolist()}


def empty_aggregate(params: RepeatedParams) -> PeriodAggregate:
    "No reports yet"
    return PeriodAggregate(params)


def aggregate_payloads(params: RepeatedParams, payloads: Iterable[Any]) -> PeriodAggregate:
    "The aggregate of one period's payloads"
    return PeriodAggregate(params).add(payloads)


def aggregate_from_json(params: RepeatedParams, data: Mapping[str, Any]) -> PeriodAggregate:
    "An aggregate from :meth:`PeriodAggregate.to_json`; AggregateMismatch when the counts cannot be this campaign's"
    try:
        reports = int(data["reports"])
        if params.mode == "mean":
            sampled, ones = np.array([reports], np.int64), np.array([int(data["ones"])], np.int64)
        else:
            sampled, ones = np.asarray(data["sampled"], np.int64), np.asarray(data["ones"], np.int64)
            if sampled.shape != (params.buckets,) or ones.shape != (params.buckets,):
                raise ValueError(f"sampled and ones must be lists of {params.buckets} counts")
    except (KeyError, TypeError, ValueError) as error:
        raise AggregateMismatch(f"not a repeated-collection aggregate: {error}") from None
    if reports < 0 or (ones < 0).any() or (ones > sampled).any() or (sampled > reports).any():
        raise AggregateMismatch("the counts are inconsistent (0 <= ones <= sampled <= reports)")
    return PeriodAggregate(params, reports, sampled, ones)
