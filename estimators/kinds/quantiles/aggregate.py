"""A quantiles campaign's mergeable aggregate: per level, the report count and the level oracle's statistic.

Each level's reports are those of a local OLH or Hadamard campaign over the level's nodes
(``client_sdk.kinds.quantiles.level_spec``), so its statistic is that oracle's own (``estimators.mechanisms``):
OLH's per-node support counts (B**l,), Hadamard's per-column signed sums (D_l,).  Both are sums over reports:
aggregates of shards or days add.  :func:`simulate_aggregate` draws the reports of many devices at once with the
same oracles' vectorised simulators (the device's distribution, ``tests`` check both against each other).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from client_sdk.errors import PayloadError
from client_sdk.kinds.quantiles import QuantilesParams, QuantilesReport, level_spec
from estimators.errors import AggregateMismatch
from estimators.mechanisms.categorical import FrequencyOracle, HadamardServer, OLHServer
from estimators.registry import ReportBatch


@lru_cache(maxsize=256)
def level_server(params: QuantilesParams, level: int) -> FrequencyOracle:
    "The server side of ``level``'s oracle (parse, statistic, support counts, simulate)"
    server_class = OLHServer if params.oracle == "olh" else HadamardServer
    return server_class(level_spec(params, level))


@dataclass
class QuantilesAggregate:
    "The sufficient statistic of a quantiles campaign's reports: per level (1..h) its count and oracle statistic"

    fingerprint: str
    sizes: np.ndarray  # reports per level, int64 (h,)
    counts: list[np.ndarray] = field(default_factory=list)  # per level, int64

    @property
    def n(self) -> int:
        return int(self.sizes.sum())

    @classmethod
    def empty(cls, params: QuantilesParams, fingerprint: str = "") -> QuantilesAggregate:
        counts = [level_server(params, level).zeros() for level in range(1, params.height + 1)]
        return cls(fingerprint, np.zeros(params.height, dtype=np.int64), counts)

    def merge(self, other: QuantilesAggregate) -> QuantilesAggregate:
        "The aggregate of both sets of reports; AggregateMismatch unless both are of the same spec and tree"
        if self.fingerprint != other.fingerprint:
            raise AggregateMismatch(f"cannot merge aggregates of {self.fingerprint} and {other.fingerprint}")
        if self.sizes.shape != other.sizes.shape or any(
                a.shape != b.shape for a, b in zip(self.counts, other.counts)):
            raise AggregateMismatch("cannot merge aggregates of trees of different shapes")
        return QuantilesAggregate(self.fingerprint, self.sizes + other.sizes,
                                  [a + b for a, b in zip(self.counts, other.counts)])

    def with_batch(self, params: QuantilesParams, level: int, batch: ReportBatch) -> QuantilesAggregate:
        "This aggregate plus a batch of one level's oracle reports (columns, as the oracle's ``parse`` makes them)"
        counts = list(self.counts)
        counts[level - 1] = counts[level - 1] + level_server(params, level).statistic(batch)
        sizes = self.sizes.copy()
        sizes[level - 1] += batch.n
        return QuantilesAggregate(self.fingerprint, sizes, counts)

    def with_reports(self, params: QuantilesParams, payloads: Sequence[Any]) -> QuantilesAggregate:
        "This aggregate plus JSON payloads, each checked (PayloadError names the first bad one: payloads[i]...)"
        by_level: dict[int, list[Any]] = {}
        for index, payload in enumerate(payloads):
            try:
                report = QuantilesReport.decode(params, payload)
            except PayloadError as error:
                raise PayloadError(f"payloads[{index}]{error.field[len('payload'):]}", error.reason) from None
            by_level.setdefault(report.level, []).append(report.payload)
        out = self
        for level, inner in sorted(by_level.items()):
            out = out.with_batch(params, level, level_server(params, level).parse(inner, checked=True))
        return out

    def to_dict(self) -> dict:
        return {"kind": "quantiles", "fingerprint": self.fingerprint, "sizes": self.sizes.tolist(),
                "counts": [level.tolist() for level in self.counts]}

    @classmethod
    def from_dict(cls, data: dict) -> QuantilesAggregate:
        return cls(str(data["fingerprint"]), np.asarray(data["sizes"], dtype=np.int64),
                   [np.asarray(level, dtype=np.int64) for level in data["counts"]])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, QuantilesAggregate):
            return NotImplemented
        return self.to_dict() == other.to_dict()


def simulate_batches(params: QuantilesParams, buckets: np.ndarray,
                     rng: np.random.Generator) -> list[tuple[int, ReportBatch]]:
    """One report from each device whose value falls in ``buckets`` (indices in [0, buckets)), as (level, that
    level's batch): levels uniform on 1..h, then each level's oracle simulator on the nodes above the buckets"""
    buckets = np.asarray(buckets, dtype=np.int64)
    levels = rng.integers(1, params.height + 1, size=len(buckets))
    return [(level, level_server(params, level).simulate(
        buckets[levels == level] // params.branching ** (params.height - level), rng))
        for level in range(1, params.height + 1)]


def aggregate_batches(params: QuantilesParams, batches: Sequence[tuple[int, ReportBatch]],
                      fingerprint: str = "") -> QuantilesAggregate:
    "The aggregate of (level, batch) pairs (what the collector does with each level's parsed reports)"
    out = QuantilesAggregate.empty(params, fingerprint)
    for level, batch in batches:
        out = out.with_batch(params, level, batch)
    return out


def simulate_aggregate(params: QuantilesParams, buckets: np.ndarray, rng: np.random.Generator,
                       fingerprint: str = "") -> QuantilesAggregate:
    "The aggregate of one simulated report from each device whose value falls in ``buckets`` (simulate_batches)"
    return aggregate_batches(params, simulate_batches(params, buckets, rng), fingerprint)


def level_frequencies(params: QuantilesParams, aggregate: QuantilesAggregate) -> list[np.ndarray]:
    "Each level's de-biased node frequencies (zeros for a level without reports)"
    out = []
    for level in range(1, params.height + 1):
        server = level_server(params, level)
        n = int(aggregate.sizes[level - 1])
        if not n:
            out.append(np.zeros(params.level_size(level)))
            continue
        p, q = server.support_probabilities()
        support = server.support_counts(n, aggregate.counts[level - 1])
        out.append((support / n - q) / (p - q))
    return out


def noise_variances(params: QuantilesParams) -> list[float]:
    "Each level's per-report noise variance factor V_l = q*(1-q*)/(p*-q*)^2 (the node variance is V_l / n_l)"
    return [level_server(params, level).variance() for level in range(1, params.height + 1)]


def support_probabilities(params: QuantilesParams) -> list[tuple[float, float]]:
    return [level_server(params, level).support_probabilities() for level in range(1, params.height + 1)]
