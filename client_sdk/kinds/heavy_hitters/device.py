"""The device side: one report of one string, and the codec both ends use for it.

``make_report(rng, params, value)`` draws, in this order (``ByteStreamRandom`` documents how each call consumes
bytes, as ``secrets`` does; another SDK reproduces a payload byte for byte from the same bytes):

pem  1. group  = randbelow(groups)             (levels 0..L-1, then the estimation group L)
     2. hash   = randbelow(hash_count)         which of the public OLH functions (``encoding.olh_seed``)
     3. keep   = bernoulli(keep): randbelow(keep.denominator) < keep.numerator
     4. only if not kept: other = randbelow(g - 1), reported as other if other < h else other + 1
     report (group, hash, y): y in [0, g), h = olh_hash(a, b, prefix_key(the group's prefix), g) with
     (a, b) = olh_seed(hash)
sfp  1. group  = randbelow(groups)             (positions 0..P-1, then the estimation group P)
     2. row    = randbelow(sketch_depth), 3. column = randbelow(sketch_width)
     4. keep   = bernoulli(keep); the bit is H[h_row(key), column]'s sign bit, flipped when not kept
     report (group, row, column, bit); key = fragment_key(puzzle_hash(string), fragment) at a position,
     prefix_key(string) in the estimation group; h_row = olh_hash(sketch seed of the row, key, width)

The payload is one JSON integer, the report's cell: its fields in the mixed radix ``payload_radices`` (most
significant first), pem (group * hash_count + hash) * g + y, sfp ((group * depth + row) * width + column) * 2 + bit,
in [0, ``cell_count``) (below 2**31: ``params`` bounds each group's table).  It is the report's flat index in
the collector's count table, so the collector counts reports with no per-field work.  The list form older SDKs
sent (``[group, hash, y]`` / ``[group, row, column, bit]``) is still parsed, to the same report.

The group is drawn here, from the device's CSPRNG, independently of the value: the collector cannot choose it, and
every report is eps-LDP for the whole string (the group and PEM's hash index are data-independent; the oracle is
eps-LDP for whatever function of the string the group reports: a prefix, a (hash, fragment) pair or the string).
"""

from __future__ import annotations

import math
from functools import lru_cache

from ...errors import PayloadError
from ...frozen import Frozen
from ...mechanisms.categorical import hadamard_sign_bit
from ...mechanisms.hashing import olh_hash
from ...randomness import RandomSource, bernoulli
from ...wire import require_int, require_list
from .encoding import encode_value, fragment_key, olh_seed, prefix_key, puzzle_hash, sketch_seeds
from .planning import oracle

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

    from .params import HeavyHittersParams


class PemReport(Frozen):
    "One PEM report: the group (level, or the estimation group), the public OLH function's index and the value y"

    __slots__ = _fields = ("group", "hash", "y")
    group: int
    hash: int
    y: int

    def __init__(self, group: int, hash: int, y: int) -> None:
        self._set(group=group, hash=hash, y=y)


class SfpReport(Frozen):
    "One SFP report: the group (fragment position, or the estimation group), the sketch row and column, the bit"

    __slots__ = _fields = ("group", "row", "column", "bit")
    group: int
    row: int
    column: int
    bit: int

    def __init__(self, group: int, row: int, column: int, bit: int) -> None:
        self._set(group=group, row=row, column=column, bit=bit)


def group_key(params: HeavyHittersParams, symbols: tuple[int, ...], group: int) -> int:
    "The key the oracle of ``group`` reports for a string's symbols"
    if group == params.estimation_group:
        return prefix_key(symbols)
    if params.algorithm == "pem":
        return prefix_key(symbols[:params.prefix_length(group)])
    return fragment_key(params.symbol_count, puzzle_hash(symbols), params.fragment(symbols, group))


def perturb_symbols(rng: RandomSource, params: HeavyHittersParams, symbols: tuple[int, ...]) -> PemReport | SfpReport:
    "The report of an encoded string (``encoding.encode_value``), drawn in the documented order"
    constants = oracle(params)
    group = rng.randbelow(params.groups)
    key = group_key(params, symbols, group)
    if params.algorithm == "pem":
        g = constants.g  # type: ignore[union-attr]
        assert params.hash_count is not None
        index = rng.randbelow(params.hash_count)
        hashed = olh_hash(*olh_seed(index), key, g)
        if bernoulli(rng, constants.keep):
            return PemReport(group, index, hashed)
        other = rng.randbelow(g - 1)
        return PemReport(group, index, other if other < hashed else other + 1)
    assert params.sketch_depth is not None and params.sketch_width is not None
    row = rng.randbelow(params.sketch_depth)
    column = rng.randbelow(params.sketch_width)
    seed_a, seed_b = sketch_seeds(params.sketch_depth)[row]
    bit = hadamard_sign_bit(olh_hash(seed_a, seed_b, key, params.sketch_width), column)
    if not bernoulli(rng, constants.keep):
        bit ^= 1
    return SfpReport(group, row, column, bit)


def make_report(rng: RandomSource, params: HeavyHittersParams, value: Any) -> int:
    """The JSON payload (the report's cell) of one report of ``value``; InvalidValue / InvalidValueType
    (``encode_value``) for a string the campaign refuses (too long with overflow 'refuse', not UTF-8, outside the
    alphabet)"""
    return report_cell(params, perturb_symbols(rng, params, encode_value(params, value)))


@lru_cache(maxsize=64)  # per report on the device and in the collector's parse: oracle() costs ~19 us
def payload_radices(params: HeavyHittersParams) -> tuple[int, ...]:
    "How many values each report field takes, in the report's order: the mixed radix of its cell"
    if params.algorithm == "pem":
        assert params.hash_count is not None
        return params.groups, params.hash_count, oracle(params).g  # type: ignore[union-attr]
    assert params.sketch_depth is not None and params.sketch_width is not None
    return params.groups, params.sketch_depth, params.sketch_width, 2


def cell_count(params: HeavyHittersParams) -> int:
    "How many cells a payload can name: the product of ``payload_radices``"
    return math.prod(payload_radices(params))


def report_cell(params: HeavyHittersParams, report: PemReport | SfpReport) -> int:
    "The payload of a report: its fields in the mixed radix ``payload_radices``"
    cell = 0
    for value, radix in zip(report._values(), payload_radices(params)):
        cell = cell * radix + value
    return cell


def parse_payload(params: HeavyHittersParams, payload: Any) -> PemReport | SfpReport:
    """The typed report of a payload (a cell; or the older list form); PayloadError naming the field unless the
    device could have produced it"""
    if not isinstance(payload, list):
        cell = require_int(payload, "payload", 0, cell_count(params))
        fields = []
        for radix in reversed(payload_radices(params)):
            cell, value = divmod(cell, radix)
            fields.append(value)
        return (PemReport if params.algorithm == "pem" else SfpReport)(*reversed(fields))
    if params.algorithm == "pem":
        assert params.hash_count is not None
        group, index, y = require_list(payload, "payload", 3)
        return PemReport(require_int(group, "payload[0]", 0, params.groups),
                         require_int(index, "payload[1]", 0, params.hash_count),
                         require_int(y, "payload[2]", 0, oracle(params).g))  # type: ignore[union-attr]
    assert params.sketch_depth is not None and params.sketch_width is not None
    group, row, column, bit = require_list(payload, "payload", 4)
    return SfpReport(require_int(group, "payload[0]", 0, params.groups),
                     require_int(row, "payload[1]", 0, params.sketch_depth),
                     require_int(column, "payload[2]", 0, params.sketch_width), require_int(bit, "payload[3]", 0, 2))


__all__ = ["PayloadError", "PemReport", "SfpReport", "cell_count", "group_key", "make_report", "parse_payload",
           "payload_radices", "perturb_symbols", "report_cell"]
