"""The collector's mergeable per-group aggregates of heavy_hitters reports (numpy).

- PEM (OLH over a public family of ``hash_count`` functions): per group the ``hash_count x g`` table of report
  counts at (hash, y), and the group's report count; merging adds.  A sufficient statistic: the decoder's support
  of a key is sum_j table[j, h_j(key)], for any key, and its size is bounded whatever n.
- SFP (Hadamard Count Mean Sketch): per group the ``depth x width`` integer matrix of signed sums
  sum(1 - 2 bit) over the reports at (row, column), and the group's report count; merging adds.

Both serialise to JSON with base64 of little-endian arrays (``to_json`` / ``from_json``, which validates).
"""

from __future__ import annotations

import base64
import marshal
from collections.abc import Iterable, Sequence
from typing import Any, Self

import numpy as np

from client_sdk.errors import PayloadError
from client_sdk.kinds.heavy_hitters import (
    HeavyHittersParams,
    PemReport,
    SfpReport,
    cell_count,
    parse_payload,
    report_cell,
)
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


class CountTable:
    """Per group a ``rows x columns`` integer table and the group's report count; merging adds both.  A report (a
    payload: its cell, ``device.report_cell``) adds at (group, row, column): PEM's (hash, y) counts one, SFP's
    (row, column) signed sums 1 - 2 bit"""

    algorithm = ""

    def __init__(self, params: HeavyHittersParams, cells: np.ndarray | None = None,
                 counts: np.ndarray | None = None) -> None:
        self.params = params
        self.cells = cells if cells is not None else np.zeros((params.groups, *self.shape(params)), np.int64)
        self.counts = counts if counts is not None else np.zeros(params.groups, np.int64)

    @staticmethod
    def shape(params: HeavyHittersParams) -> tuple[int, int]:
        raise NotImplementedError

    @staticmethod
    def tallies(params: HeavyHittersParams, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        "The flat table and the per-group report counts of the reports at payload cells ``cells``"
        raise NotImplementedError

    def add(self, payloads: Iterable[Any]) -> Self:
        "This aggregate plus ``payloads`` (validated: PayloadError naming the field)"
        rows = payloads if type(payloads) is list else list(payloads)
        cells = payload_cells(self.params, rows)
        if cells is None:  # some payload is irregular (or of the older list form): parsed one by one
            reports = [parse_payload(self.params, payload) for payload in rows]
            return self.merge(self.from_reports(self.params, reports))
        return self.merge(self.from_cells(self.params, cells))

    @classmethod
    def from_reports(cls, params: HeavyHittersParams, reports: Sequence[PemReport | SfpReport]) -> Self:
        return cls.from_cells(params, np.array([report_cell(params, r) for r in reports], dtype=np.int64))

    @classmethod
    def from_cells(cls, params: HeavyHittersParams, cells: np.ndarray) -> Self:
        "The aggregate of the reports of payloads ``cells`` (integers in [0, cell_count), checked by the caller)"
        out = cls(params)
        flat, counts = cls.tallies(params, cells)
        out.cells.reshape(-1)[:] = flat
        out.counts[:] = counts
        return out

    def merge(self, other: Self) -> Self:
        if type(other) is not type(self):
            raise AggregateMismatch("cannot merge aggregates of different heavy_hitters algorithms")
        _same(self.params, other.params)
        return type(self)(self.params, self.cells + other.cells, self.counts + other.counts)

    def to_json(self) -> dict:
        return {"algorithm": self.algorithm, "counts": self.counts.tolist(),
                "groups": [_encode(self.cells[g].ravel()) for g in range(self.params.groups)]}

    @classmethod
    def from_json(cls, params: HeavyHittersParams, data: Any) -> Self:
        groups = _groups_of(params, data, cls.algorithm)
        counts = data.get("counts")
        if not isinstance(counts, list) or len(counts) != params.groups or not all(
                type(c) is int and c >= 0 for c in counts):
            raise PayloadError("counts", f"must be {params.groups} non-negative integers")
        shape = cls.shape(params)
        cells = np.zeros((params.groups, *shape), np.int64)
        for i, text in enumerate(groups):
            flat = _decode(text, "int64", f"groups[{i}]")
            if len(flat) != shape[0] * shape[1]:
                raise PayloadError(f"groups[{i}]", f"must hold {shape[0]} x {shape[1]} = {shape[0] * shape[1]} cells")
            cls._check(flat, counts[i], f"groups[{i}]")
            cells[i] = flat.reshape(shape)
        return cls(params, cells, np.array(counts, np.int64))

    @staticmethod
    def _check(flat: np.ndarray, count: int, field: str) -> None:
        raise NotImplementedError


class PemAggregate(CountTable):
    "Per group the hash_count x g table of how many reports drew public OLH function j and reported y"

    algorithm = "pem"

    @staticmethod
    def shape(params: HeavyHittersParams) -> tuple[int, int]:
        assert params.hash_count is not None
        return params.hash_count, oracle(params).g  # type: ignore[union-attr]

    @staticmethod
    def tallies(params: HeavyHittersParams, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        "A payload is its table's flat index: (group * hash_count + hash) * g + y"
        flat = np.bincount(cells, minlength=cell_count(params))
        return flat, flat.reshape(params.groups, -1).sum(axis=1)

    @staticmethod
    def _check(flat: np.ndarray, count: int, field: str) -> None:
        if len(flat) and (int(flat.min()) < 0 or int(flat.sum()) != count):
            raise PayloadError(field, "must be non-negative counts adding up to the group's report count")


class SfpAggregate(CountTable):
    "Per group the sketch's signed sums (``cells[group, row, column]`` = sum(1 - 2 bit)) and report counts"

    algorithm = "sfp"

    @staticmethod
    def shape(params: HeavyHittersParams) -> tuple[int, int]:
        assert params.sketch_depth is not None and params.sketch_width is not None
        return params.sketch_depth, params.sketch_width

    @staticmethod
    def tallies(params: HeavyHittersParams, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        "A payload is ((group * depth + row) * width + column) * 2 + bit: per cell the bit-0 minus the bit-1 reports"
        by_bit = np.bincount(cells, minlength=cell_count(params)).reshape(-1, 2)
        return by_bit[:, 0] - by_bit[:, 1], by_bit.reshape(params.groups, -1).sum(axis=1)

    @staticmethod
    def _check(flat: np.ndarray, count: int, field: str) -> None:
        if len(flat) and int(np.abs(flat).sum()) > count:
            raise PayloadError(field, "its sums exceed the group's report count")


# The vectorised parse of add() and of the collector's ingestion: parse_payload's checks over the whole batch, None
# when any payload fails one (the caller then parses one by one, to name each bad payload's field).  The payloads are
# read in one C pass by marshal (format version 2: no back-references, so each object is written in full where it
# occurs), whose bytes for a list of ints that fit in 32 bits are "[", the count as int32, then "i" and the int32
# value of each; anything else (a bool: "T" / "F", a float, a str, None, a list (the older payload form), a larger
# int) is written with another tag or refused, so the batch matches that layout byte for byte exactly when each
# payload is an int of 32 bits.
MARSHAL_VERSION = 2
_INT32 = np.dtype([("tag", "u1"), ("value", "<i4")])
_INT_TAG = marshal.dumps(0, MARSHAL_VERSION)[0]
assert marshal.dumps([-1], MARSHAL_VERSION)[5:] == bytes([_INT_TAG]) + b"\xff" * 4, "not marshal's int layout"


def payload_cells(params: HeavyHittersParams, rows: list) -> np.ndarray | None:
    """The payloads as an int32 array of cells (a view of marshal's bytes) when every payload is one the device
    could have sent (an int in [0, cell_count): ``parse_payload`` would accept it), else None"""
    if not rows:
        return np.zeros(0, np.int32)
    try:
        written = marshal.dumps(rows if type(rows) is list else list(rows), MARSHAL_VERSION)
    except ValueError:  # an object marshal cannot write: no JSON value
        return None
    if len(written) != 5 + len(rows) * _INT32.itemsize:  # the list's tag and count, then one record per payload
        return None
    items = np.frombuffer(written, _INT32, offset=5)
    if not (items["tag"] == _INT_TAG).all():
        return None
    cells = items["value"]
    # every cell in [0, cell_count) in one pass: a negative one is above every count as uint32
    return cells if (cells.view(np.uint32) < cell_count(params)).all() else None


def empty_aggregate(params: HeavyHittersParams) -> PemAggregate | SfpAggregate:
    "The aggregate of no reports for ``params``' algorithm"
    return PemAggregate(params) if params.algorithm == "pem" else SfpAggregate(params)


def aggregate_json(params: HeavyHittersParams, data: Any) -> PemAggregate | SfpAggregate:
    "An aggregate from its JSON (``to_json``), validated against ``params``"
    return (PemAggregate if params.algorithm == "pem" else SfpAggregate).from_json(params, data)


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
