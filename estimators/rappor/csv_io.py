"""The reference implementation's file formats (``google/rappor``: ``analysis/R/read_input.R``,
``bin/hash_candidates.py``, ``analysis/tools/sum_bits.py``), read and written so either side's files work.

params.csv   a header ``k,h,m,p,q,f`` (quotes and spaces tolerated) and one row of values
counts.csv   no header; one row per cohort: the number of reports, then the count of 1s at Bloom bit 0 .. k-1
map.csv      no header; one row per candidate: the string, then ``h*m`` 1-based row numbers ``cohort*k + bit + 1``
             in cohort order (empty fields, which the reference writes for repeated bits, are skipped)
candidates   one string per line (``--candidates FILE``); blank lines skipped, duplicates kept once
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

import numpy as np

from client_sdk.errors import SpecError
from client_sdk.rappor import RapporParams

from ..errors import EstimatorError
from .counts import check_counts
from .design import CandidateMap

PARAMS_HEADER = ("k", "h", "m", "p", "q", "f")
Source = str | os.PathLike | IO[str]


class RapporFileError(EstimatorError):
    "A reference-format file is malformed; the message names the file, row and what is wrong"


@contextmanager
def _opened(source: Source, mode: str) -> Iterator[IO[str]]:
    if isinstance(source, (str, os.PathLike)):
        with open(source, mode, newline="", encoding="utf-8") as handle:
            yield handle
    else:
        yield source  # type: ignore[misc]


def _name(source: Source) -> str:
    return (
        os.fspath(source) if isinstance(source, (str, os.PathLike)) else getattr(source, "name", "<stream>")
    )


def read_params_csv(source: Source) -> RapporParams:
    "RapporParams from a params CSV; k = 1 means the boolean encoding"
    with _opened(source, "r") as handle:
        rows = [row for row in csv.reader(handle) if any(cell.strip() for cell in row)]
    name = _name(source)
    if not rows or tuple(cell.strip() for cell in rows[0]) != PARAMS_HEADER:
        raise RapporFileError(f"{name}: the header must be k,h,m,p,q,f")
    if len(rows) != 2:
        raise RapporFileError(f"{name}: expected the header and exactly one row of values")
    values = [cell.strip() for cell in rows[1]]
    if len(values) != len(PARAMS_HEADER):
        raise RapporFileError(f"{name}: the values row must have 6 fields")
    data: dict[str, float | int] = {}
    for key, text in zip(PARAMS_HEADER, values):
        try:
            data[key] = int(text) if key in ("k", "h", "m") else float(text)
        except ValueError:
            raise RapporFileError(f"{name}: {key} = {text!r} is not a number") from None
    try:
        return RapporParams.from_dict(data)
    except SpecError as exc:
        raise RapporFileError(f"{name}: {exc}") from None


def write_params_csv(params: RapporParams, destination: Source) -> None:
    "The params CSV the reference tools read"
    with _opened(destination, "w") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(PARAMS_HEADER)
        writer.writerow([params.k, params.h, params.m, repr(params.p), repr(params.q), repr(params.f)])


def read_counts_csv(source: Source, params: RapporParams) -> np.ndarray:
    "Counts (m, k+1) int64 from a counts CSV, checked against ``params``"
    name = _name(source)
    with _opened(source, "r") as handle:
        rows = [row for row in csv.reader(handle) if any(cell.strip() for cell in row)]
    try:
        values = [[_whole_number(cell) for cell in row] for row in rows]
    except ValueError as exc:
        raise RapporFileError(f"{name}: {exc}") from None
    if len(values) != params.m or any(len(row) != params.k + 1 for row in values):
        widths = sorted({len(row) for row in values})
        raise RapporFileError(
            f"{name}: expected m = {params.m} rows of k + 1 = {params.k + 1} numbers, "
            f"got {len(values)} rows of {widths}"
        )
    try:
        return check_counts(params, np.asarray(values, dtype=np.int64))
    except ValueError as exc:
        raise RapporFileError(f"{name}: {exc}") from None


def _whole_number(cell: str) -> int:
    text = cell.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)  # R may write 1e+05
    except ValueError:
        number = math.nan
    if not number.is_integer():
        raise ValueError(f"{text!r} is not a whole number")
    return int(number)


def write_counts_csv(counts: np.ndarray, destination: Source) -> None:
    "The counts CSV: per cohort, reports then the k bit counts"
    with _opened(destination, "w") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        for row in np.asarray(counts, dtype=np.int64).tolist():
            writer.writerow(row)


def read_map_csv(source: Source, params: RapporParams) -> CandidateMap:
    "A CandidateMap from a map CSV (duplicate strings dropped, first kept, as the reference does)"
    name = _name(source)
    width = params.h * params.m
    limit = params.m * params.k
    candidates: list[str] = []
    positions: list[list[int]] = []
    seen: set[str] = set()
    with _opened(source, "r") as handle:
        for line_number, row in enumerate(csv.reader(handle), start=1):
            if not row or not any(cell.strip() for cell in row):
                continue
            fields = [cell.strip() for cell in row[1:] if cell.strip()]
            if len(row) - 1 != width:
                raise RapporFileError(f"{name}, row {line_number}: expected 1 + h*m = {width + 1} fields")
            try:
                numbers = [int(field) for field in fields]
            except ValueError:
                raise RapporFileError(f"{name}, row {line_number}: positions must be integers") from None
            if any(not 1 <= number <= limit for number in numbers):
                raise RapporFileError(f"{name}, row {line_number}: positions must lie in [1, m*k = {limit}]")
            if row[0] in seen:
                continue
            seen.add(row[0])
            candidates.append(row[0])
            positions.append([number - 1 for number in numbers] + [-1] * (width - len(numbers)))
    array = np.asarray(positions, dtype=np.int64).reshape(len(candidates), width)
    return CandidateMap(params, tuple(candidates), array)


def write_map_csv(candidate_map: CandidateMap, destination: Source) -> None:
    "The map CSV of the reference's ``hash_candidates.py``: string, then 1-based rows cohort by cohort"
    with _opened(destination, "w") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        for candidate, row in zip(candidate_map.candidates, candidate_map.positions.tolist()):
            writer.writerow([candidate] + [position + 1 if position >= 0 else "" for position in row])


def read_candidates(source: Source) -> list[str]:
    "Candidate strings, one per line (surrounding whitespace stripped, blank lines skipped, duplicates once)"
    with _opened(source, "r") as handle:
        lines = [line.strip() for line in handle]
    return list(dict.fromkeys(line for line in lines if line))
