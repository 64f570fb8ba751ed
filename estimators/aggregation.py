"""Mergeable sufficient statistics: every mechanism's aggregate is a vector of sums over reports.

``aggregate(spec, reports)`` computes it for a batch (vectorised, no Python loop over reports), ``a.merge(b)``
adds two, and the estimators need nothing else.  That is what lets the collector update an aggregate in the
same transaction as the insert, and lets aggregates from shards or days be added.

=========  =====================================================================================
grr        counts[v]: reports whose reported index is v                                    (d,)
sue, oue   counts[v]: reports whose bit v is 1                                             (d,)
olh        counts[v]: reports that support v, i.e. h_seed(v) == y                          (d,)
hadamard   counts[j]: sum over reports in column j of (+1 for bit 0, -1 for bit 1)         (D,)
laplace    [sum code, sum code^2]
duchi      [sum code]
piecewise  [sum code, sum code^2]
hybrid     [n Duchi, sum Duchi code, n Piecewise, sum Piecewise code, sum Piecewise code^2]
rappor     counts[cohort] = [reports, bit 1 count, ..., bit k count]                       (m, k+1)
=========  =====================================================================================

Numeric sums are Python integers (object arrays): they are exact, so merging in any order gives the same
aggregate, and sums of squares cannot overflow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from client_sdk.mechanisms.categorical import hadamard_size
from client_sdk.spec import Spec

from .batch import ReportBatch, parse_payloads

OLH_CHUNK_ELEMENTS = 1 << 18  # reports x values evaluated per numpy step: fits in cache-friendly buffers


class AggregateMismatch(ValueError):
    "Two aggregates of different specs cannot be merged"


@dataclass
class Aggregate:
    "The sufficient statistic of ``n`` reports made under the spec with ``fingerprint``"

    mechanism: str
    fingerprint: str
    n: int
    counts: np.ndarray

    @classmethod
    def empty(cls, spec: Spec) -> Aggregate:
        return cls(spec.mechanism, spec.fingerprint, 0, _zeros(spec))

    def merge(self, other: Aggregate) -> Aggregate:
        if (self.mechanism, self.fingerprint) != (other.mechanism, other.fingerprint):
            raise AggregateMismatch(f"cannot merge aggregates of {self.fingerprint} and {other.fingerprint}")
        return Aggregate(self.mechanism, self.fingerprint, self.n + other.n, self.counts + other.counts)

    def to_dict(self) -> dict:
        return {"mechanism": self.mechanism, "fingerprint": self.fingerprint, "n": int(self.n),
                "counts": _to_python(self.counts)}

    @classmethod
    def from_dict(cls, data: dict) -> Aggregate:
        counts = data["counts"]
        numeric = data["mechanism"] in ("laplace", "duchi", "piecewise", "hybrid")
        array = np.array([int(c) for c in counts], dtype=object) if numeric else np.asarray(counts, dtype=np.int64)
        return cls(data["mechanism"], data["fingerprint"], int(data["n"]), array)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Aggregate):
            return NotImplemented
        return (self.mechanism, self.fingerprint, self.n) == (other.mechanism, other.fingerprint, other.n) and \
            self.counts.shape == other.counts.shape and bool(np.all(self.counts == other.counts))


def aggregate(spec: Spec, reports: ReportBatch | Sequence[Any]) -> Aggregate:
    "The aggregate of a batch, or of a list of JSON payloads that passed ``check_payload``"
    batch = reports if isinstance(reports, ReportBatch) else parse_payloads(spec, reports)
    if batch.mechanism != spec.mechanism:
        raise AggregateMismatch(f"batch of {batch.mechanism!r} reports for a {spec.mechanism!r} spec")
    return Aggregate(spec.mechanism, spec.fingerprint, batch.n, sufficient_statistic(spec, batch))


def merge(a: Aggregate, b: Aggregate) -> Aggregate:
    return a.merge(b)


def sufficient_statistic(spec: Spec, batch: ReportBatch) -> np.ndarray:
    m = spec.mechanism
    if m == "grr":
        return np.bincount(batch["index"], minlength=spec.domain_size).astype(np.int64)
    if m in ("sue", "oue"):
        return bit_counts(batch["bits"], spec.domain_size)
    if m == "olh":
        from client_sdk.mechanisms.categorical import OLH

        return olh_support_counts(batch["a"], batch["b"], batch["y"], spec.domain_size, OLH(spec).g)
    if m == "hadamard":
        size = hadamard_size(spec.domain_size)
        per_column = np.bincount(batch["column"], minlength=size)
        ones = np.bincount(batch["column"], weights=batch["bit"], minlength=size).astype(np.int64)
        return (per_column - 2 * ones).astype(np.int64)
    if m in ("laplace", "piecewise"):
        code = batch["code"]
        return np.array([_sum(code), _sum_squares(code)], dtype=object)
    if m == "duchi":
        return np.array([_sum(batch["code"])], dtype=object)
    if m == "hybrid":
        branch, code = batch["branch"], batch["code"]
        duchi, pm = code[branch == 0], code[branch == 1]
        return np.array([len(duchi), _sum(duchi), len(pm), _sum(pm), _sum_squares(pm)], dtype=object)
    if m == "rappor":
        from .rappor import rappor_counts

        return rappor_counts(spec, batch)
    raise ValueError(f"unknown mechanism {m!r}")


def bit_counts(packed: np.ndarray, width: int) -> np.ndarray:
    """Ones per bit position over packed big-endian rows (n, ceil(width/8)) -> (width,) int64.

    One histogram of (byte position, byte value) pairs, then a 256 x 8 table lookup: n * width / 8 cheap
    operations instead of unpacking n * width bits."""
    n, nbytes = packed.shape
    histogram = np.zeros(256 * nbytes, dtype=np.int64)
    columns = np.arange(nbytes, dtype=np.intp)[None, :]
    rows = max(1, (1 << 20) // max(nbytes, 1))
    keys = np.empty((min(rows, max(n, 1)), nbytes), dtype=np.intp)  # bincount's own index type: no extra copy
    for start in range(0, n, rows):
        chunk = packed[start:start + rows]
        chunk_keys = keys[: len(chunk)]
        # value-major bins (value * nbytes + column): sparse rows hit neighbouring counters, not one per 2 KiB
        np.multiply(chunk, nbytes, out=chunk_keys, dtype=np.intp)
        chunk_keys += columns
        histogram += np.bincount(chunk_keys.ravel(), minlength=256 * nbytes)
    per_byte = histogram.reshape(256, nbytes).T @ _BYTE_BITS  # (nbytes, 8)
    return per_byte.reshape(-1)[:width].astype(np.int64)


_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.int64)  # (256, 8)


def olh_support_counts(a: np.ndarray, b: np.ndarray, y: np.ndarray, d: int, g: int) -> np.ndarray:
    """For every value v < d, how many reports (a, b, y) have h_(a,b)(v) == y; vectorised over reports x values.

    h(v) = y  <=>  ((a v + b) mod 2^64) >> 32 lies in [lo_y, hi_y) with lo_y = ceil(y 2^32 / g), so the test is
    one multiply, one add and one unsigned compare per pair: (a v + b - lo_y 2^32) mod 2^64 < (hi_y - lo_y) 2^32.
    """
    a = np.asarray(a, dtype=np.uint64)
    y = np.asarray(y, dtype=np.uint64)
    lo = (y * np.uint64(1 << 32) + np.uint64(g - 1)) // np.uint64(g)
    hi = ((y + np.uint64(1)) * np.uint64(1 << 32) + np.uint64(g - 1)) // np.uint64(g)
    shift = np.uint64(32)
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


def _zeros(spec: Spec) -> np.ndarray:
    m = spec.mechanism
    if m in ("grr", "sue", "oue", "olh"):
        return np.zeros(spec.domain_size, dtype=np.int64)
    if m == "hadamard":
        return np.zeros(hadamard_size(spec.domain_size), dtype=np.int64)
    sizes = {"laplace": 2, "piecewise": 2, "duchi": 1, "hybrid": 5}
    if m in sizes:
        return np.array([0] * sizes[m], dtype=object)
    if m == "rappor":
        return np.zeros((spec.rappor.m, spec.rappor.k + 1), dtype=np.int64)
    raise ValueError(f"unknown mechanism {m!r}")


def _sum(code: np.ndarray) -> int:
    "Exact sum: int64 when it cannot overflow, Python integers otherwise"
    if len(code) == 0:
        return 0
    if int(np.abs(code).max()) * len(code) < (1 << 62):
        return int(code.sum())
    return sum(int(c) for c in code.tolist())


def _sum_squares(code: np.ndarray) -> int:
    "Exact sum of squares: int64 dot products over chunks small enough not to overflow, else Python integers"
    if len(code) == 0:
        return 0
    largest = int(np.abs(code).max())
    if largest == 0:
        return 0
    rows = min(1 << 20, (1 << 62) // (largest * largest))
    if rows < 1:
        return sum(int(c) * int(c) for c in code.tolist())
    total = 0
    for start in range(0, len(code), rows):
        part = code[start:start + rows]
        total += int(np.dot(part, part))
    return total


def _to_python(counts: np.ndarray) -> list:
    return [_to_python(row) for row in counts] if counts.ndim > 1 else [int(c) for c in counts]
