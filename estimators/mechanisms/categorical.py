"""Frequency oracles on the server: GRR, SUE/OUE, OLH, Hadamard (device side: ``client_sdk.mechanisms.categorical``).

=========  ==============================================  ================================================
mechanism  batch columns                                   sufficient statistic
=========  ==============================================  ================================================
grr        index (int64)                                   counts[v]: reports whose index is v        (d,)
sue, oue   bits: packed big-endian rows, uint8 (n, d/8)    counts[v]: reports whose bit v is 1        (d,)
olh        a, b (uint64 seed halves), y (int64)            counts[v]: reports with h_seed(v) == y     (d,)
hadamard   column (int64), bit (int64)                     counts[j]: +1 per bit 0, -1 per bit 1 in
                                                           column j                                   (D,)
=========  ==============================================  ================================================

Simulators take domain indices and draw with the SDK's quantized probabilities: comparing a uniform double with
a multiple of 2**-32 is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from client_sdk.errors import PayloadError
from client_sdk.mechanisms import GRR, OLH, CategoricalMechanism, Hadamard, UnaryEncoding

from .. import ones_test
from ..bits import bit_counts, hex_rows, strict_hex_rows
from ..frequency import estimate_frequencies
from ..hadamard import walsh_hadamard
from .base import ReportBatch, ServerMechanism, pair_columns, pair_payloads

OLH_CHUNK_ELEMENTS = 1 << 18  # reports x values evaluated per numpy step: fits in cache-friendly buffers
BITS_CHUNK = 1 << 24  # unary-encoding bits simulated per numpy step


class FrequencyOracle(ServerMechanism):
    "A categorical mechanism: its aggregate gives per-value support counts, de-biased with p* and q*"

    device: CategoricalMechanism

    def __init__(self, spec: Any) -> None:
        super().__init__(spec)
        self.d = self.spec.domain_size

    def zeros(self) -> np.ndarray:
        return np.zeros(self.d, dtype=np.int64)

    def support_counts(self, n: int, counts: np.ndarray) -> np.ndarray:
        "How many of the n reports support each domain value"
        return counts.astype(np.float64)

    def support_probabilities(self) -> tuple[float, float]:
        "(p*, q*) of the reports the aggregate holds: a report supports its true value w.p. p*, another w.p. q*"
        return self.device.p_star, self.device.q_star

    def defence(self) -> dict[str, Any] | None:
        "The test refusing crafted reports at ingestion, as the estimate states it (``defence``), or None"
        return None

    def simulate(self, true_values: Any, rng: np.random.Generator) -> ReportBatch:
        "Reports for domain indices in [0, d)"
        index = np.asarray(true_values).astype(np.int64).reshape(-1)
        if index.size and (index.min() < 0 or index.max() >= self.d):
            raise ValueError("true_values must be domain indices in [0, d)")
        return ReportBatch(self.spec.mechanism, len(index), self.simulate_indices(index, rng))

    def simulate_indices(self, index: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def variance(self) -> float:
        return self.device.variance_factor

    def estimate(self, aggregate: Any, *, confidence: float, delta: float | None) -> Any:
        return estimate_frequencies(self.spec, aggregate, confidence=confidence, delta=delta)


def randomized_response(index: np.ndarray, keep: float, d: int, rng: np.random.Generator) -> np.ndarray:
    "GRR on [0, d): keep the index w.p. ``keep``, else a uniform other index"
    n = len(index)
    other = rng.integers(0, d - 1, size=n, dtype=np.int64)
    other += other >= index
    return np.where(rng.random(n) < keep, index, other)


class GRRServer(FrequencyOracle):
    names = ("grr",)
    device: GRR

    def columns(self, payloads: Sequence[Any]) -> dict[str, np.ndarray]:
        return {"index": np.asarray(payloads, dtype=np.int64).reshape(len(payloads))}

    @classmethod
    def payloads_of(cls, batch: ReportBatch) -> list:
        return batch["index"].tolist()

    def statistic(self, batch: ReportBatch) -> np.ndarray:
        return np.bincount(batch["index"], minlength=self.d).astype(np.int64)

    def small_statistic(self, payloads: Sequence[Any]) -> np.ndarray | None:
        counts = [0] * self.d
        for index in payloads:
            counts[index] += 1
        return np.array(counts, dtype=np.int64)

    def simulate_indices(self, index: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"index": randomized_response(index, float(self.device.keep), self.d, rng)}


class UnaryServer(FrequencyOracle):
    """SUE and OUE; a spec's ``max_ones`` refuses reports with more bits set (``estimators.ones_test``): they fail
    ``check_payload``, the simulator drops them, and the estimate de-biases the rest with p' and q'"""

    names = ("sue", "oue")
    device: UnaryEncoding

    def __init__(self, spec: Any) -> None:
        super().__init__(spec)
        self.max_ones: int | None = spec.max_ones
        if self.max_ones is not None:
            p, q = self.device.p_star, self.device.q_star
            self.false_rejection = ones_test.false_rejection_rate(self.d, p, q, self.max_ones)
            self.accepted = ones_test.accepted_probabilities(self.d, p, q, self.max_ones)

    def check_payload(self, payload: Any) -> None:
        super().check_payload(payload)
        if self.max_ones is not None:
            ones = int(payload, 16).bit_count()
            if ones > self.max_ones:
                raise PayloadError("payload", f"sets {ones} bits; this campaign takes at most {self.max_ones} "
                                              f"(max_ones: honest reports set more with probability "
                                              f"{self.false_rejection:.3g})")

    def support_probabilities(self) -> tuple[float, float]:
        return self.accepted if self.max_ones is not None else super().support_probabilities()

    def defence(self) -> dict[str, Any] | None:
        if self.max_ones is None:
            return None
        return {"test": "ones", "max_ones": self.max_ones, "false_rejection": self.false_rejection,
                "p_accepted": self.accepted[0], "q_accepted": self.accepted[1]}

    def columns(self, payloads: Sequence[Any]) -> dict[str, np.ndarray]:
        return {"bits": hex_rows(payloads, (self.d + 7) // 8)}

    def bulk_columns(self, payloads: Sequence[Any]) -> dict[str, np.ndarray] | None:
        "``require_packed_bits`` for all payloads at once: strict hex of the right length, padding bits 0"
        rows = strict_hex_rows(payloads, (self.d + 7) // 8)
        padding = 8 * ((self.d + 7) // 8) - self.d
        if rows is None or (padding and len(rows) and np.any(rows[:, -1] & ((1 << padding) - 1))):
            return None
        if self.max_ones is not None and len(rows) and int(ones_per_row(rows).max()) > self.max_ones:
            return None  # check_payload names the first refused one
        return {"bits": rows}

    @classmethod
    def payloads_of(cls, batch: ReportBatch) -> list:
        return [row.tobytes().hex() for row in batch["bits"]]

    def statistic(self, batch: ReportBatch) -> np.ndarray:
        return bit_counts(batch["bits"], self.d)

    def small_statistic(self, payloads: Sequence[Any]) -> np.ndarray | None:
        return np.array(small_bit_counts(payloads, self.d), dtype=np.int64)

    def simulate(self, true_values: Any, rng: np.random.Generator) -> ReportBatch:
        "Reports for domain indices in [0, d), without those the collector would refuse (``max_ones``)"
        batch = super().simulate(true_values, rng)
        if self.max_ones is None:
            return batch
        kept = ones_per_row(batch["bits"]) <= self.max_ones
        return ReportBatch(self.spec.mechanism, int(kept.sum()), {"bits": batch["bits"][kept]})

    def simulate_indices(self, index: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Every bit Bernoulli(q*) by comparing a uniform 32-bit integer with q* 2^32, then the true bit redrawn.

        The comparison is done a byte at a time: the top byte decides unless it equals the threshold's top byte
        (probability 1/256), and only then are the low 24 bits drawn.  Exact, with a quarter of the random bytes."""
        n, d = len(index), self.d
        threshold = int(self.device.other_bit_one * (1 << 32))
        high, low = threshold >> 24, threshold & 0xFFFFFF
        out = np.empty((n, (d + 7) // 8), dtype=np.uint8)
        rows = max(1, BITS_CHUNK // d)
        p_true = float(self.device.true_bit_one)
        for start in range(0, n, rows):
            stop = min(start + rows, n)
            top = np.frombuffer(rng.bytes((stop - start) * d), dtype=np.uint8).reshape(stop - start, d)
            bits = top < high
            ties = np.flatnonzero(top == high)
            if len(ties):
                bits.reshape(-1)[ties] = rng.integers(0, 1 << 24, size=len(ties)) < low
            bits[np.arange(stop - start), index[start:stop]] = rng.random(stop - start) < p_true
            out[start:stop] = np.packbits(bits, axis=1)
        return {"bits": out}


def olh_hash_many(a: np.ndarray, b: np.ndarray, x: np.ndarray, g: int) -> np.ndarray:
    """``client_sdk.mechanisms.hashing.olh_hash`` over arrays (uint64, wrapping mod 2**64 as the SDK masks).

    g <= 2**31 (``olh_range``) keeps the 32-bit value times g below 2**63."""
    with np.errstate(over="ignore"):
        return (((a * x.astype(np.uint64) + b) >> np.uint64(32)) * np.uint64(g)) >> np.uint64(32)


def olh_support_counts(a: np.ndarray, b: np.ndarray, y: np.ndarray, d: int, g: int) -> np.ndarray:
    """For every value v < d, how many reports (a, b, y) have h_(a,b)(v) == y; vectorised over reports x values.

    The hash inverted: h(v) = y  <=>  ((a v + b) mod 2^64) >> 32 lies in [lo_y, hi_y) with lo_y = ceil(y 2^32 / g),
    so the test is one multiply, one add and one unsigned compare per pair:
    (a v + b - lo_y 2^32) mod 2^64 < (hi_y - lo_y) 2^32.  With g <= 2**31, (y + 1) 2^32 + g < 2^64: no overflow.
    """
    a = np.asarray(a, dtype=np.uint64)
    y = np.asarray(y, dtype=np.uint64)
    lo = (y * np.uint64(1 << 32) + np.uint64(g - 1)) // np.uint64(g)
    hi = ((y + np.uint64(1)) * np.uint64(1 << 32) + np.uint64(g - 1)) // np.uint64(g)
    shift = np.uint64(32)
    with np.errstate(over="ignore"):
        offset = np.asarray(b, dtype=np.uint64) - (lo << shift)  # wraps mod 2^64 by design
    width = (hi - lo) << shift
    values = np.arange(d, dtype=np.uint64)
    counts = np.zeros(d, dtype=np.int64)
    rows = max(1, OLH_CHUNK_ELEMENTS // d)
    buffer = np.empty((rows, d), dtype=np.uint64)
    hits = np.empty((rows, d), dtype=bool)
    with np.errstate(over="ignore"):
        for start in range(0, len(a), rows):
            stop = min(start + rows, len(a))
            k = stop - start
            np.multiply(a[start:stop, None], values[None, :], out=buffer[:k])
            buffer[:k] += offset[start:stop, None]
            np.less(buffer[:k], width[start:stop, None], out=hits[:k])
            counts += np.count_nonzero(hits[:k], axis=0)
    return counts


class OLHServer(FrequencyOracle):
    names = ("olh",)
    device: OLH

    def columns(self, payloads: Sequence[Any]) -> dict[str, np.ndarray]:
        seeds = hex_rows([p[0] for p in payloads], 16).view(">u8").reshape(len(payloads), 2)
        return {"a": seeds[:, 0].astype(np.uint64), "b": seeds[:, 1].astype(np.uint64),
                "y": np.asarray([p[1] for p in payloads], dtype=np.int64).reshape(len(payloads))}

    @classmethod
    def payloads_of(cls, batch: ReportBatch) -> list:
        seeds = np.stack([batch["a"], batch["b"]], axis=1).astype(">u8")
        return [[row.tobytes().hex(), y] for row, y in zip(seeds, batch["y"].tolist())]

    def statistic(self, batch: ReportBatch) -> np.ndarray:
        return olh_support_counts(batch["a"], batch["b"], batch["y"], self.d, self.device.g)

    def simulate_indices(self, index: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        seeds = rng.integers(0, np.iinfo(np.uint64).max, size=(len(index), 2), dtype=np.uint64, endpoint=True)
        a, b = seeds[:, 0].copy(), seeds[:, 1].copy()
        hashed = olh_hash_many(a, b, index, self.device.g).astype(np.int64)
        return {"a": a, "b": b, "y": randomized_response(hashed, float(self.device.keep), self.device.g, rng)}


def parity(x: np.ndarray) -> np.ndarray:
    "popcount(x) mod 2, elementwise"
    x = x.astype(np.uint64)
    for shift in (32, 16, 8, 4, 2, 1):
        x ^= x >> np.uint64(shift)
    return (x & np.uint64(1)).astype(np.int64)


class HadamardServer(FrequencyOracle):
    names = ("hadamard",)
    device: Hadamard

    def zeros(self) -> np.ndarray:
        return np.zeros(self.device.size, dtype=np.int64)

    def columns(self, payloads: Sequence[Any]) -> dict[str, np.ndarray]:
        return pair_columns(payloads, "column", "bit")

    @classmethod
    def payloads_of(cls, batch: ReportBatch) -> list:
        return pair_payloads(batch, "column", "bit")

    def statistic(self, batch: ReportBatch) -> np.ndarray:
        size = self.device.size
        per_column = np.bincount(batch["column"], minlength=size)
        ones = np.bincount(batch["column"], weights=batch["bit"], minlength=size).astype(np.int64)
        return (per_column - 2 * ones).astype(np.int64)

    def support_counts(self, n: int, counts: np.ndarray) -> np.ndarray:
        "n/2 + WHT(S)/2 with S the per-column signed sums, in O(n + D log D)"
        return (n + walsh_hadamard(counts.astype(np.float64))[: self.d]) / 2

    def simulate_indices(self, index: np.ndarray, rng: np.random.Generator) -> dict[str, np.ndarray]:
        n = len(index)
        column = rng.integers(0, self.device.size, size=n, dtype=np.int64)
        flip = rng.random(n) >= float(self.device.keep)
        return {"column": column, "bit": parity(index & column) ^ flip.astype(np.int64)}


def ones_per_row(rows: np.ndarray) -> np.ndarray:
    "The number of bits set in each packed row"
    return np.unpackbits(rows, axis=1).sum(axis=1, dtype=np.int64)


def small_bit_counts(payloads: Sequence[str], width: int) -> list[int]:
    "Ones per bit position of a few checked hex payloads (``width`` bits, most significant first), in Python"
    counts = [0] * width
    for payload in payloads:
        bits = format(int(payload, 16), f"0{4 * len(payload)}b")
        position = bits.find("1")
        while 0 <= position < width:
            counts[position] += 1
            position = bits.find("1", position + 1)
    return counts
