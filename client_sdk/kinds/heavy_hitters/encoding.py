"""Strings as symbols, and the public hashes every side computes from them (standard library only).

A string is encoded as ``max_length`` symbols: symbol 0 is END (padding after the string's last character), symbols
1..A are the alphabet's characters in the declared order, or the bytes 0..255 of its UTF-8 form (symbol = byte + 1)
when the spec declares no alphabet.  So the empty string is ``max_length`` ENDs, and every prefix of a string is
again a symbol sequence.

Every hash below is SHA-256 over a fixed ASCII label, a zero byte, then big-endian integers, so another SDK computes
the same bits from the same symbols:

- ``prefix_key(symbols)``: the first 4 bytes of SHA-256(``PREFIX_LABEL`` 0x00, len as 2 bytes, each symbol as 2
  bytes), a 32-bit key for the OLH hash (``hashing.olh_hash`` takes keys below 2**32);
- ``puzzle_hash(symbols)``: the first byte of SHA-256(``PUZZLE_LABEL`` 0x00, each symbol as 2 bytes) (SFP's
  8-bit hash of the whole string, Apple 2017);
- ``sketch_seeds(depth)``: row j's multiply-add-shift seed (a, b) = the first 16 bytes of SHA-256(``SKETCH_LABEL``
  0x00, j as 4 bytes), a and b 8 bytes each: the Count Mean Sketch's public hash family;
- ``olh_seed(j)``: the same with ``OLH_LABEL``: PEM's public OLH family (``olh_seeds(count)``, its first count).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import lru_cache

from ...errors import InvalidValue, InvalidValueType

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

    from .params import HeavyHittersParams

END = 0
PREFIX_LABEL = b"ldp-telemetry/heavy_hitters/prefix"
PUZZLE_LABEL = b"ldp-telemetry/heavy_hitters/puzzle"
SKETCH_LABEL = b"ldp-telemetry/heavy_hitters/sketch"
OLH_LABEL = b"ldp-telemetry/heavy_hitters/olh"
PUZZLE_BITS = 8


def _symbol_bytes(symbols: Sequence[int]) -> bytes:
    return b"".join(symbol.to_bytes(2, "big") for symbol in symbols)


def encode_value(params: HeavyHittersParams, value: Any) -> tuple[int, ...]:
    """The ``max_length`` symbols of ``value`` (a str; bytes too without an alphabet), truncated or refused when
    longer, as ``params.overflow`` says; InvalidValue for non-UTF-8 text, characters outside the alphabet and refused
    strings, InvalidValueType for anything else (the messages never repeat the value: errors reach logs)"""
    if params.alphabet is None:
        symbols = [byte + 1 for byte in _utf8(params, value)]
    else:
        if not isinstance(value, str):
            raise InvalidValueType("a heavy_hitters campaign with an alphabet takes a str")
        index = params.alphabet_index
        if any(character not in index for character in value):
            raise InvalidValue("the string has a character outside the campaign's alphabet")
        if len(value) > params.max_length and params.overflow == "refuse":
            raise InvalidValue(f"the string is longer than max_length ({params.max_length} characters)")
        symbols = [index[character] for character in value[:params.max_length]]
    return tuple(symbols) + (END,) * (params.max_length - len(symbols))


def _utf8(params: HeavyHittersParams, value: Any) -> bytes:
    "The UTF-8 bytes of ``value``, truncated at a character boundary at or below max_length bytes"
    if isinstance(value, str):
        try:
            raw = value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidValue("the string is not valid UTF-8 (it has a lone surrogate)") from None
    elif isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidValue("the bytes are not valid UTF-8") from None
    else:
        raise InvalidValueType("a heavy_hitters campaign takes a str (or UTF-8 bytes)")
    if len(raw) <= params.max_length:
        return raw
    if params.overflow == "refuse":
        raise InvalidValue(f"the string is longer than max_length ({params.max_length} UTF-8 bytes)")
    cut = params.max_length
    while cut > 0 and raw[cut] & 0xC0 == 0x80:  # raw[cut] continues a character: cut before that character
        cut -= 1
    return raw[:cut]


def symbols_to_bytes(params: HeavyHittersParams, symbols: Sequence[int]) -> bytes:
    "The UTF-8 bytes of a symbol sequence (up to its first END)"
    kept = []
    for symbol in symbols:
        if symbol == END:
            break
        kept.append(symbol)
    if params.alphabet is None:
        return bytes(symbol - 1 for symbol in kept)
    return "".join(params.alphabet[symbol - 1] for symbol in kept).encode("utf-8")


def symbols_to_text(params: HeavyHittersParams, symbols: Sequence[int]) -> str:
    "The string of a symbol sequence (invalid UTF-8 from a spurious discovery shown with U+FFFD)"
    return symbols_to_bytes(params, symbols).decode("utf-8", "replace")


def is_padded(symbols: Sequence[int]) -> bool:
    "Whether nothing but END follows the first END (the only symbol sequences a device encodes)"
    seen_end = False
    for symbol in symbols:
        if symbol == END:
            seen_end = True
        elif seen_end:
            return False
    return True


def prefix_key(symbols: Sequence[int]) -> int:
    "The 32-bit OLH key of a prefix (of any length: lengths differ in the hashed bytes)"
    digest = hashlib.sha256(PREFIX_LABEL + b"\x00" + len(symbols).to_bytes(2, "big") + _symbol_bytes(symbols))
    return int.from_bytes(digest.digest()[:4], "big")


def puzzle_hash(symbols: Sequence[int]) -> int:
    "SFP's 8-bit hash of the whole (padded) string"
    return hashlib.sha256(PUZZLE_LABEL + b"\x00" + _symbol_bytes(symbols)).digest()[0]


def fragment_key(symbol_count: int, puzzle: int, fragment: Sequence[int]) -> int:
    "The sketch key of (puzzle hash, fragment): puzzle * B**len + the fragment in base B (B symbols with END)"
    key = puzzle
    for symbol in fragment:
        key = key * symbol_count + symbol
    return key


def _seed(label: bytes, index: int) -> tuple[int, int]:
    digest = hashlib.sha256(label + b"\x00" + index.to_bytes(4, "big")).digest()
    return int.from_bytes(digest[:8], "big"), int.from_bytes(digest[8:16], "big")


@lru_cache(maxsize=16)
def sketch_seeds(depth: int) -> tuple[tuple[int, int], ...]:
    "The public (a, b) multiply-add-shift seed of each of the sketch's ``depth`` rows"
    return tuple(_seed(SKETCH_LABEL, row) for row in range(depth))


@lru_cache(maxsize=1 << 16)
def olh_seed(index: int) -> tuple[int, int]:
    "The public (a, b) multiply-add-shift seed of PEM's OLH hash function ``index``"
    return _seed(OLH_LABEL, index)


@lru_cache(maxsize=16)
def olh_seeds(count: int) -> tuple[tuple[int, int], ...]:
    "PEM's OLH family of ``count`` functions"
    return tuple(olh_seed(index) for index in range(count))
