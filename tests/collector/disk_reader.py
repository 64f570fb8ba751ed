"""The disk reader: where a stored report sits in the raw files, as someone holding them would read them.

SQLite: the database file and its WAL parsed by the file format (https://www.sqlite.org/fileformat2.html), not
through SQLite: every B-tree leaf page's cell pointer array and cell contents, and every WAL frame's header and page
image.  A report is found by its 16-byte id in a cell's record.  PostgreSQL: the heap order (``ctid``) and the
order of the rows in a ``pg_dump`` of the table.

:func:`concordance` is what the reader gains: the share of pairs of reports that a physical order puts in their
order of arrival (0.5: no better than chance; 1: the arrival order itself).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

# index leaf, index interior (WITHOUT ROWID tables and indexes keep whole entries in interior cells too), table leaf
CELL_PAGE_TYPES = (0x0A, 0x02, 0x0D)
WAL_HEADER_BYTES = 32
WAL_FRAME_HEADER_BYTES = 24


def varint(data: bytes, offset: int) -> tuple[int, int]:
    "SQLite's big-endian varint at ``offset``: (value, offset after it)"
    value = 0
    for i in range(9):
        byte = data[offset + i]
        if i == 8:
            return (value << 8) | byte, offset + 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, offset + i + 1
    raise AssertionError("unreachable")


def _serial_size(serial: int) -> int:
    if serial >= 12:
        return (serial - 12) // 2 if serial % 2 == 0 else (serial - 13) // 2
    return (0, 1, 2, 3, 4, 6, 8, 8, 0, 0, 0, 0)[serial]


def record_values(data: bytes, start: int, end: int) -> list[bytes]:
    "The raw bytes of each column of the record in ``data[start:end]`` (as much of it as is on this page)"
    header_size, offset = varint(data, start)
    serials = []
    while offset < start + header_size:
        serial, offset = varint(data, offset)
        serials.append(serial)
    values, body = [], start + header_size
    for serial in serials:
        size = _serial_size(serial)
        values.append(data[body:min(body + size, end)])
        body += size
    return values


def leaf_cells(page: bytes, page_number: int) -> list[tuple[int, list[bytes]]]:
    """(content offset, column bytes) of every cell holding a record (leaf pages; an index's interior pages), in
    cell pointer order; [] for any other page"""
    base = 100 if page_number == 1 else 0
    if len(page) <= base or page[base] not in CELL_PAGE_TYPES:
        return []
    kind = page[base]
    cells = struct.unpack_from(">H", page, base + 3)[0]
    header = 12 if kind == 0x02 else 8
    out = []
    for i in range(cells):
        offset = struct.unpack_from(">H", page, base + header + 2 * i)[0]
        if not 0 < offset < len(page):
            return []  # not a page in use (a freelist page whose first byte looks like a leaf's)
        size, at = varint(page, offset + (4 if kind == 0x02 else 0))
        if kind == 0x0D:
            _, at = varint(page, at)  # the rowid
        try:
            out.append((offset, record_values(page, at, min(at + size, len(page)))))
        except IndexError:
            return []
    return out


def page_size(header: bytes) -> int:
    size = struct.unpack_from(">H", header, 16)[0]
    return 65536 if size == 1 else size


def wal_frames(path: Path) -> list[tuple[int, bytes]]:
    "(page number, page image) of every frame of a WAL file, in file order"
    if not path.exists() or path.stat().st_size < WAL_HEADER_BYTES:
        return []
    data = path.read_bytes()
    size = struct.unpack_from(">I", data, 8)[0]
    frames, at = [], WAL_HEADER_BYTES
    while at + WAL_FRAME_HEADER_BYTES + size <= len(data):
        number = struct.unpack_from(">I", data, at)[0]
        frames.append((number, data[at + WAL_FRAME_HEADER_BYTES:at + WAL_FRAME_HEADER_BYTES + size]))
        at += WAL_FRAME_HEADER_BYTES + size
    return frames


def database_cells(path: Path, ids: set[bytes]) -> list[tuple[int, int, bytes]]:
    """(page number, cell content offset, id) of every cell holding one of ``ids`` (a table's row or an index
    entry) in the database as the files hold it now: each page read from the database file or, if the WAL holds a
    newer image of it, from the WAL's last frame of that page"""
    data = path.read_bytes()
    size = page_size(data)
    pages = {number: data[(number - 1) * size:number * size] for number in range(1, len(data) // size + 1)}
    pages.update(wal_frames(Path(f"{path}-wal")))
    return [(number, offset, value) for number in sorted(pages) for offset, values in leaf_cells(pages[number], number)
            for value in values if value in ids]


def database_positions(path: Path, ids: set[bytes]) -> dict[bytes, tuple[int, int]]:
    "(page number, cell content offset) of the first cell (by page number) holding each of ``ids``"
    found: dict[bytes, tuple[int, int]] = {}
    for number, offset, value in database_cells(path, ids):
        found.setdefault(value, (number, offset))
    return found


def wal_positions(path: Path, ids: set[bytes]) -> dict[bytes, tuple[int, int]]:
    """Where each of ``ids`` first shows up in the WAL: (frame index, cell content offset in that frame's page);
    frames are read in file order (a WAL not reset keeps older frames after the newer ones' end)"""
    found: dict[bytes, tuple[int, int]] = {}
    for frame, (number, page) in enumerate(wal_frames(path)):
        for offset, values in leaf_cells(page, number):
            for value in values:
                if value in ids and value not in found:
                    found[value] = (frame, offset)
    return found


def occurrences(paths: Iterable[Path], value: bytes) -> int:
    "How many times ``value`` occurs anywhere in the files (live cells, freed space, old frames alike)"
    return sum(path.read_bytes().count(value) for path in paths if path.exists())


def concordance(arrival: Sequence[bytes], rank: Callable[[bytes], Any], *,
                same_group: Callable[[bytes], object] | None = None) -> tuple[float, float]:
    """The share of pairs (among reports that ``rank`` places, not None; with ``same_group``, only pairs in the
    same group, e.g. the same page) whose physical order (``rank``, lower first) is their arrival order, ties
    counting one half; and its standard error if the physical order were a random one"""
    groups: dict[object, list[tuple[Any, int]]] = {}
    for position, report in enumerate(arrival):
        if rank(report) is not None:
            groups.setdefault(same_group(report) if same_group else None, []).append((rank(report), position))
    return _pairs(groups.values())


def cells_concordance(arrival: Sequence[bytes], cells: Iterable[tuple[int, int, bytes]]) -> tuple[float, float]:
    """:func:`concordance` of the cells of each page (``database_cells``): within a page, a higher content offset
    first (SQLite fills a page from its end)"""
    position = {report: i for i, report in enumerate(arrival)}
    groups: dict[int, list[tuple[Any, int]]] = {}
    for page, offset, report in cells:
        groups.setdefault(page, []).append((-offset, position[report]))
    return _pairs(groups.values())


def _pairs(groups: Iterable[list[tuple[Any, int]]]) -> tuple[float, float]:
    """Over the pairs within each group of (rank, arrival position): the share in arrival order and its SE under
    independence.  A group of n has a number of concordant pairs of variance n (n - 1) (2n + 5) / 72 (Kendall's
    tau, variance 2 (2n + 5) / (9 n (n - 1)), times the n (n - 1) / 2 pairs, halved); groups add up."""
    agree, pairs, variance = 0.0, 0, 0.0
    for members in groups:
        n = len(members)
        pairs += n * (n - 1) // 2
        variance += n * (n - 1) * (2 * n + 5) / 72
        for i, (rank_a, at_a) in enumerate(members):
            for rank_b, at_b in members[i + 1:]:
                if rank_a == rank_b:
                    agree += 0.5
                elif (rank_a < rank_b) == (at_a < at_b):
                    agree += 1
    if not pairs:
        return 0.5, math.inf
    return agree / pairs, math.sqrt(variance) / pairs
