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
from functools import lru_cache
from typing import Any, Self

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


class CountTable:
    """Per group a ``rows x columns`` integer table and the group's report count; merging adds both.  A report adds
    ``weight`` at (group, row, column): PEM's (hash, y) counts with weight 1, SFP's (row, column) signed sums with
    weight 1 - 2 bit"""

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
    def totals(flat: np.ndarray, last: np.ndarray, size: int) -> np.ndarray:
        "The ``size`` cells' sums of the reports at cells ``flat`` with last payload fields ``last`` (integers)"
        raise NotImplementedError

    def add(self, payloads: Iterable[Any]) -> Self:
        "This aggregate plus ``payloads`` (validated: PayloadError naming the field)"
        rows = payloads if type(payloads) is list else list(payloads)
        fields = payload_fields(self.params, rows)
        if fields is None:  # some payload is irregular: the per-payload parse names its field
            reports = [parse_payload(self.params, payload) for payload in rows]
            return self.merge(self.from_reports(self.params, reports))
        return self.merge(self.from_arrays(self.params, *fields))

    @classmethod
    def from_reports(cls, params: HeavyHittersParams, reports: Sequence[PemReport | SfpReport]) -> Self:
        fields = np.array([r._values() for r in reports], dtype=np.int64).reshape(-1, len(_highs(params)))
        return cls.from_arrays(params, *fields.T)

    @classmethod
    def from_arrays(cls, params: HeavyHittersParams, group: np.ndarray, row: np.ndarray, column: np.ndarray,
                    last: np.ndarray | None = None) -> Self:
        "The aggregate of reports given as columns (SFP: ``last`` the bits; PEM: column is y, no ``last``)"
        out = cls(params)
        rows, columns = cls.shape(params)
        flat = (group.astype(np.int64) * rows + row) * columns + column
        out.cells.reshape(-1)[:] = cls.totals(flat, last if last is not None else column, out.cells.size)
        out.counts[:] = np.bincount(group, minlength=params.groups)
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
    def totals(flat: np.ndarray, last: np.ndarray, size: int) -> np.ndarray:
        return np.bincount(flat, minlength=size)

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
    def totals(flat: np.ndarray, last: np.ndarray, size: int) -> np.ndarray:
        "Per cell the reports of bit 0 minus those of bit 1"
        by_bit = np.bincount(flat * 2 + last, minlength=2 * size).reshape(size, 2)
        return by_bit[:, 0] - by_bit[:, 1]

    @staticmethod
    def _check(flat: np.ndarray, count: int, field: str) -> None:
        if len(flat) and int(np.abs(flat).sum()) > count:
            raise PayloadError(field, "its sums exceed the group's report count")


# The vectorised parse of add() and of the collector's ingestion: the same checks as parse_payload over whole
# columns, None when any payload fails one (the caller then parses one by one, to name each bad payload's field).
# The payloads are read in one C pass by marshal (format version 2: no back-references, so each object is written
# in full where it occurs), whose bytes for a list of k ints that fit in 32 bits are "[", the length k as int32,
# then "i" and the int32 value of each; anything else (a bool: "T" / "F", a float, a str, None, a list of another
# length, a larger int, a list subclass) is written otherwise or refused, so the rows match that layout byte for
# byte exactly when each is a list of k ints.
MARSHAL_VERSION = 2


def _highs(params: HeavyHittersParams) -> tuple[int, ...]:
    "The exclusive upper bound of each payload field"
    if params.algorithm == "pem":
        assert params.hash_count is not None
        return params.groups, params.hash_count, oracle(params).g  # type: ignore[union-attr]
    assert params.sketch_depth is not None and params.sketch_width is not None
    return params.groups, params.sketch_depth, params.sketch_width, 2


@lru_cache(maxsize=8)
def _layout(fields: int) -> tuple[np.dtype, np.void, list[str]]:
    """marshal's record of a list of ``fields`` 32-bit ints as a dtype (the list's tag and length, then each int's
    tag and value), the record of [0] * fields, and the names of the parts every such list shares (not the values)"""
    shared = ["list", "length", *(f"tag{i}" for i in range(fields))]
    record = np.dtype([("list", "u1"), ("length", "<i4")] + [
        (f"{part}{i}", kind) for i in range(fields) for part, kind in (("tag", "u1"), ("value", "<i4"))])
    zeros, ones = (np.frombuffer(marshal.dumps([value] * fields, MARSHAL_VERSION), record)[0] for value in (0, -1))
    assert all(zeros[name] == ones[name] for name in shared) and all(
        (zeros[f"value{i}"], ones[f"value{i}"]) == (0, -1) for i in range(fields)), "not marshal's list layout"
    return record, zeros, shared


def payload_fields(params: HeavyHittersParams, rows: list) -> list[np.ndarray] | None:
    """Each payload field's int32 column (views of marshal's bytes) when every payload is one the device could have
    sent (``parse_payload`` would accept it), else None"""
    highs = _highs(params)
    if not rows:
        return [np.zeros(0, np.int32) for _ in highs]
    record, expected, shared = _layout(len(highs))
    try:
        written = marshal.dumps(rows if type(rows) is list else list(rows), MARSHAL_VERSION)
    except ValueError:  # an object marshal cannot write: no JSON value
        return None
    head = len(written) - len(rows) * record.itemsize  # the outer list's tag and length, if each row is a record
    if head != 1 + record["length"].itemsize:
        return None
    items = np.frombuffer(written, record, offset=head)
    if not all((items[name] == expected[name]).all() for name in shared):
        return None
    # every field in [0, high) in one pass per field: a negative one is above every high as uint32
    values = [items[f"value{i}"] for i in range(len(highs))]
    return values if all((value.view(np.uint32) < high).all() for value, high in zip(values, highs)) else None


def payload_columns(params: HeavyHittersParams, rows: list) -> np.ndarray | None:
    "The payloads' fields as an (n, fields) int64 array when ``payload_fields`` accepts them all, else None"
    fields = payload_fields(params, rows)
    return None if fields is None else np.stack(fields, axis=1).astype(np.int64)


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
