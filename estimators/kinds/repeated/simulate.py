"""Vectorised simulation of repeated-collection devices (numpy), for tests and benchmarks: never on a device.

It draws with the device's own thresholds (``RepeatedParams.point_threshold``, ``keep_threshold``,
``flip_threshold``, ``gamma_threshold``) and rounds, buckets and memoizes as :mod:`client_sdk.kinds.repeated.device`
does, so its reports have the device's distribution (the tests compare the two).  Every device's memoized answers are
drawn up front (mean: one per rounding point; histogram: one per own sampled bucket and one for "other"), which has
the distribution of drawing each the first time it is used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from client_sdk.kinds.repeated import RepeatedParams
from client_sdk.randomness import PROB_DENOMINATOR

from .aggregate import PeriodAggregate

_FLOYD_BITS = 64  # up to this many sampled buckets Floyd's algorithm, above a random permutation of each row


@dataclass
class SimulatedDevices:
    """n devices' persisted state: ``alpha`` (mean) or ``buckets`` (n, d), and every memoized answer: ``answers``
    (n, s) for mean, (n, d + 1, d) for histogram (index p: the device's own bucket is ``buckets[:, p]``; index d:
    any bucket it did not sample)"""

    params: RepeatedParams
    alpha: np.ndarray | None
    buckets: np.ndarray | None
    answers: np.ndarray

    @property
    def size(self) -> int:
        return int(self.answers.shape[0])

    def keys(self, values: np.ndarray) -> np.ndarray:
        "Each device's answer key for ``values``: its rounding point (mean) or own-bucket index / d (histogram)"
        params, values = self.params, np.clip(np.asarray(values, np.float64), self.params.low, self.params.high)
        scaled = (values - params.low) / (params.high - params.low)
        if params.mode == "mean":
            assert params.rounding_points is not None and self.alpha is not None
            steps = params.rounding_points - 1
            position = scaled * steps
            point = np.minimum(np.floor(position), steps).astype(np.int64)
            up = (self.alpha < (position - point) * PROB_DENOMINATOR) & (point < steps)
            return point + up
        assert params.buckets is not None and params.bits is not None and self.buckets is not None
        bucket = np.minimum(np.floor(scaled * params.buckets).astype(np.int64), params.buckets - 1)
        match = self.buckets == bucket[:, None]
        return np.where(match.any(axis=1), match.argmax(axis=1), params.bits)

    def report(self, values: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray | None, np.ndarray]:
        "One period's (buckets, sent bits) of every device holding ``values`` (gamma's flips drawn afresh)"
        keys = self.keys(values)
        bits = self.answers[np.arange(self.size), keys]
        if self.params.gamma_threshold:
            bits = bits ^ (rng.integers(0, PROB_DENOMINATOR, bits.shape) < self.params.gamma_threshold)
        return self.buckets, bits.astype(np.int8)

    def aggregate(self, values: np.ndarray, rng: np.random.Generator) -> PeriodAggregate:
        "One period's aggregate of every device holding ``values``"
        buckets, bits = self.report(values, rng)
        return PeriodAggregate(self.params).add_arrays(buckets, bits)


def simulate_devices(params: RepeatedParams, n: int, rng: np.random.Generator) -> SimulatedDevices:
    "n fresh devices: their alphas or sampled buckets and all their memoized answers"
    if params.mode == "mean":
        assert params.rounding_points is not None
        alpha = rng.integers(0, PROB_DENOMINATOR, n, dtype=np.int64)
        thresholds = [params.point_threshold(point) for point in range(params.rounding_points)]
        numerators = np.array([numerator for numerator, _ in thresholds], np.int64)
        denominator = thresholds[0][1]
        answers = (rng.integers(0, denominator, (n, params.rounding_points)) < numerators).astype(np.int8)
        return SimulatedDevices(params, alpha, None, answers)
    assert params.buckets is not None and params.bits is not None
    d = params.bits
    buckets = sample_buckets(params.buckets, d, n, rng)
    bit_thresholds = np.full((d + 1, d), params.flip_threshold, np.int64)
    bit_thresholds[np.arange(d), np.arange(d)] = params.keep_threshold
    answers = (rng.integers(0, PROB_DENOMINATOR, (n, d + 1, d)) < bit_thresholds).astype(np.int8)
    return SimulatedDevices(params, None, buckets, answers)


def sample_buckets(k: int, d: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """n rows of d distinct buckets of 0..k-1, each row uniform and sorted ascending

    Up to ``_FLOYD_BITS`` samples: Floyd's algorithm, vectorised over rows (d steps, n d^2 comparisons, exact for
    any k: step j draws t uniform in [0, k - d + j] and takes t, or k - d + j when t is taken already); above, the
    first d of a random permutation of each row."""
    if d <= _FLOYD_BITS:
        rows = np.empty((n, d), np.int64)
        for column, top in enumerate(range(k - d, k)):
            drawn = rng.integers(0, top + 1, n)
            taken = (rows[:, :column] == drawn[:, None]).any(axis=1)
            rows[:, column] = np.where(taken, top, drawn)
        return np.sort(rows, axis=1)
    return np.sort(np.argsort(rng.random((n, k)), axis=1)[:, :d], axis=1)
