"""The collector's mergeable per-group aggregates of heavy_hitters reports (numpy).

- PEM (OLH reports carry a fresh seed each): the statistic is the reports themselves, per group three arrays
  (a, b: uint64 seed halves; y: uint32); merging concatenates.  20 bytes per report.
- SFP (Hadamard Count Mean Sketch): per group the ``depth x width`` integer matrix of signed sums
  sum(1 - 2 bit) over the reports at (row, column), and the group's report count; merging adds.

Both serialise to JSON with base64 of little-endian arrays (``to_json`` / ``from_json``, which validates).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from typing import Any

import numpy as np

from client_sdk.errors import PayloadError
from client_sdk.kinds.heavy_hitters import HeavyHittersParams, PemReport, SfpReport, parse_payload
from client_sdk.kinds.heavy_hitters.planning import oracle

from ...errors import AggregateMismatch


def _encode(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()).decode()


def _decode(text: Any, dtype: str, field: str) -> np.ndarray:
    if not isinstance(text, str):
        raise PayloadError(field, "must be a base64 string")
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        raise PayloadError(field, "is not valid base64") from None
    width = np.dtype(dtype).itemsize
    if len(raw) % width:
        raise PayloadError(field, f"must hold a whole number of {width}-byte values")
    return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype)


class PemAggregate:
    "The reports of each group of a PEM campaign, as arrays (``a``, ``b``, ``y`` per group)"

    def __init__(self, params: HeavyHittersParams, groups: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
                 | None = None) -> None:
        self.params = params
        empty = (np.zeros(0, np.uint64), np.zeros(0, np.uint64), np.zeros(0, np.uint32))
        self.groups = groups if groups is not None else [empty] * params.groups

    @property
    def counts(self) -> np.ndarray:
        return np.array([len(y) for _, _, y in self.groups], dtype=np.int64)

    def add(self, payloads: Iterable[Any]) -> PemAggregate:
        "This aggregate plus ``payloads`` (validated: PayloadError naming the field)"
        rows = list(payloads)
        arrays = _pem_arrays(self.params, rows)
        if arrays is None:  # some payload is irregular: the per-payload parse names its field
            reports = [parse_payload(self.params, payload) for payload in rows]
            return self.merge(PemAggregate.from_reports(self.params, reports))  # type: ignore[arg-type]
        group, a, b, y = arrays
        order = np.argsort(group, kind="stable")
        bounds = np.searchsorted(group[order], np.arange(self.params.groups + 1))
        parts = [order[bounds[i]:bounds[i + 1]] for i in range(self.params.groups)]
        return self.merge(PemAggregate(self.params, [(a[part], b[part], y[part]) for part in parts]))

    @classmethod
    def from_reports(cls, params: HeavyHittersParams, reports: list[PemReport]) -> PemAggregate:
        groups = []
        for group in range(params.groups):
            mine = [r for r in reports if r.group == group]
            groups.append((np.array([r.a for r in mine], np.uint64), np.array([r.b for r in mine], np.uint64),
                           np.array([r.y for r in mine], np.uint32)))
        return cls(params, groups)

    def merge(self, other: PemAggregate) -> PemAggregate:
        _same(self.params, other.params)
        groups = [(np.concatenate([a, a2]), np.concatenate([b, b2]), np.concatenate([y, y2]))
                  for (a, b, y), (a2, b2, y2) in zip(self.groups, other.groups)]
        return PemAggregate(self.params, groups)

    def to_json(self) -> dict:
        return {"algorithm": "pem", "groups": [{"a": _encode(a), "b": _encode(b), "y": _encode(y)}
                                               for a, b, y in self.groups]}

    @classmethod
    def from_json(cls, params: HeavyHittersParams, data: Any) -> PemAggregate:
        groups = _groups_of(params, data, "pem")
        out = []
        g = oracle(params).g  # type: ignore[union-attr]
        for i, group in enumerate(groups):
            if not isinstance(group, dict):
                raise PayloadError(f"groups[{i}]", "must be an object with a, b and y")
            a, b = _decode(group.get("a"), "uint64", f"groups[{i}].a"), _decode(group.get("b"), "uint64",
                                                                               f"groups[{i}].b")
            y = _decode(group.get("y"), "uint32", f"groups[{i}].y")
            if not len(a) == len(b) == len(y):
                raise PayloadError(f"groups[{i}]", "a, b and y must hold as many reports each")
            if len(y) and int(y.max()) >= g:
                raise PayloadError(f"groups[{i}].y", f"must be in [0, {g})")
            out.append((a, b, y))
        return cls(params, out)


class SfpAggregate:
    "Per group the sketch's signed sums (``sums[group, row, column]``) and report counts"

    def __init__(self, params: HeavyHittersParams, sums: np.ndarray | None = None,
                 counts: np.ndarray | None = None) -> None:
        assert params.sketch_depth is not None and params.sketch_width is not None
        self.params = params
        shape = (params.groups, params.sketch_depth, params.sketch_width)
        self.sums = sums if sums is not None else np.zeros(shape, np.int64)
        self.counts = counts if counts is not None else np.zeros(params.groups, np.int64)

    def add(self, payloads: Iterable[Any]) -> SfpAggregate:
        "This aggregate plus ``payloads`` (validated: PayloadError naming the field)"
        rows = list(payloads)
        fields = _sfp_arrays(self.params, rows)
        if fields is None:  # some payload is irregular: the per-payload parse names its field
            reports = [parse_payload(self.params, payload) for payload in rows]
            return self.merge(SfpAggregate.from_reports(self.params, reports))  # type: ignore[arg-type]
        return self.merge(SfpAggregate.from_arrays(self.params, fields[:, 0], fields[:, 1], fields[:, 2],
                                                   fields[:, 3]))

    @classmethod
    def from_reports(cls, params: HeavyHittersParams, reports: list[SfpReport]) -> SfpAggregate:
        fields = np.array([r._values() for r in reports], dtype=np.int64).reshape(-1, 4)
        return cls.from_arrays(params, fields[:, 0], fields[:, 1], fields[:, 2], fields[:, 3])

    @classmethod
    def from_arrays(cls, params: HeavyHittersParams, group: np.ndarray, row: np.ndarray, column: np.ndarray,
                    bit: np.ndarray) -> SfpAggregate:
        out = cls(params)
        np.add.at(out.sums, (group, row, column), 1 - 2 * bit.astype(np.int64))
        out.counts[:] = np.bincount(group, minlength=params.groups)
        return out

    def merge(self, other: SfpAggregate) -> SfpAggregate:
        _same(self.params, other.params)
        return SfpAggregate(self.params, self.sums + other.sums, self.counts + other.counts)

    def to_json(self) -> dict:
        return {"algorithm": "sfp", "counts": self.counts.tolist(),
                "groups": [_encode(self.sums[g].ravel()) for g in range(self.params.groups)]}

    @classmethod
    def from_json(cls, params: HeavyHittersParams, data: Any) -> SfpAggregate:
        assert params.sketch_depth is not None and params.sketch_width is not None
        groups = _groups_of(params, data, "sfp")
        counts = data.get("counts")
        if not isinstance(counts, list) or len(counts) != params.groups or not all(
                type(c) is int and c >= 0 for c in counts):
            raise PayloadError("counts", f"must be {params.groups} non-negative integers")
        size = params.sketch_depth * params.sketch_width
        sums = np.zeros((params.groups, params.sketch_depth, params.sketch_width), np.int64)
        for i, text in enumerate(groups):
            flat = _decode(text, "int64", f"groups[{i}]")
            if len(flat) != size:
                raise PayloadError(f"groups[{i}]", f"must hold depth * width = {size} sums")
            if len(flat) and int(np.abs(flat).max()) > counts[i]:
                raise PayloadError(f"groups[{i}]", "a sum exceeds the group's report count")
            sums[i] = flat.reshape(params.sketch_depth, params.sketch_width)
        return cls(params, sums, np.array(counts, np.int64))


# The vectorised parse of add(): the same checks as parse_payload over whole columns, None when any payload fails
# one (add() then parses one by one, and the first bad payload's PayloadError names its field).
_SEED_HEX = re.compile(r"[0-9A-Fa-f]*")


def _ints(values: list) -> bool:
    return all(type(value) is int for value in values)


def _in_range(column: np.ndarray, high: int) -> bool:
    return not len(column) or (int(column.min()) >= 0 and int(column.max()) < high)


def _pem_arrays(params: HeavyHittersParams, rows: list) -> tuple[np.ndarray, ...] | None:
    if not all(type(row) is list and len(row) == 3 for row in rows):
        return None
    groups, seeds, ys = [row[0] for row in rows], [row[1] for row in rows], [row[2] for row in rows]
    if not (_ints(groups) and _ints(ys) and all(type(seed) is str and len(seed) == 32 for seed in seeds)):
        return None
    joined = "".join(seeds)
    if not _SEED_HEX.fullmatch(joined):
        return None
    try:
        group, y = np.array(groups, np.int64), np.array(ys, np.int64)
    except OverflowError:
        return None
    if not (_in_range(group, params.groups) and _in_range(y, oracle(params).g)):  # type: ignore[union-attr]
        return None
    halves = np.frombuffer(bytes.fromhex(joined), dtype=">u8").astype(np.uint64).reshape(-1, 2)
    return group, halves[:, 0].copy(), halves[:, 1].copy(), y.astype(np.uint32)


def _sfp_arrays(params: HeavyHittersParams, rows: list) -> np.ndarray | None:
    assert params.sketch_depth is not None and params.sketch_width is not None
    if not all(type(row) is list and len(row) == 4 and _ints(row) for row in rows):
        return None
    try:
        fields = np.array(rows, np.int64).reshape(-1, 4)
    except OverflowError:
        return None
    highs = (params.groups, params.sketch_depth, params.sketch_width, 2)
    return fields if all(_in_range(fields[:, i], high) for i, high in enumerate(highs)) else None


def empty_aggregate(params: HeavyHittersParams) -> PemAggregate | SfpAggregate:
    "The aggregate of no reports for ``params``' algorithm"
    return PemAggregate(params) if params.algorithm == "pem" else SfpAggregate(params)


def aggregate_json(params: HeavyHittersParams, data: Any) -> PemAggregate | SfpAggregate:
    "An aggregate from its JSON (``to_json``), validated against ``params``"
    return (PemAggregate if params.algorithm == "pem" else SfpAggregate).from_json(params, data)  # type: ignore


def _groups_of(params: HeavyHittersParams, data: Any, algorithm: str) -> list:
    if not isinstance(data, dict) or data.get("algorithm") != algorithm:
        raise PayloadError("algorithm", f"must be {algorithm!r} (the campaign's)")
    groups = data.get("groups")
    if not isinstance(groups, list) or len(groups) != params.groups:
        raise PayloadError("groups", f"must be a list of {params.groups} groups")
    return groups


def _same(mine: HeavyHittersParams, theirs: HeavyHittersParams) -> None:
    if mine != theirs:
        raise AggregateMismatch("cannot merge aggregates of different heavy_hitters parameters")
