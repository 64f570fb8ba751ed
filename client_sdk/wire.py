"""The pieces every payload is made of, and the checks that accept exactly them (standard library only).

Every mechanism's ``check_payload`` is built from these, and the collector and the estimators both validate
through ``check_payload``: there is one definition of a valid payload.
"""

from __future__ import annotations

import numbers
import re

from .errors import PayloadError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

_BITS_TO_ASCII = bytes.maketrans(b"\x00\x01", b"01")
_HEX = re.compile(r"[0-9A-Fa-f]*")


def bits_to_hex(bits: bytearray, width: int) -> str:
    "Pack ``width`` 0/1 bytes into a big-endian hex string, zero-padded to whole bytes"
    nbytes = (width + 7) // 8
    value = int(bytes(bits).translate(_BITS_TO_ASCII), 2) << (8 * nbytes - width)
    return value.to_bytes(nbytes, "big").hex()


def hex_length(width: int) -> int:
    "Hex characters of ``width`` packed bits"
    return 2 * ((width + 7) // 8)


def is_integer(value: Any) -> bool:
    "An integer (Python's or numpy's), not a bool"
    if type(value) is int:  # the common case first: JSON integers
        return True
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and type(value).__name__ != "bool_"


def require_int(payload: Any, field: str, low: int, high: int) -> int:
    "``payload`` must be an integer in [low, high)"
    if not is_integer(payload):
        raise PayloadError(field, "must be an integer")
    if not low <= payload < high:
        raise PayloadError(field, f"must be in [{low}, {high})")
    return int(payload)


def require_list(payload: Any, field: str, length: int) -> list:
    "``payload`` must be a list of ``length`` elements"
    if not isinstance(payload, list) or len(payload) != length:
        raise PayloadError(field, f"must be a list of {length} elements")
    return payload


def require_hex(payload: Any, field: str, length: int) -> bytes:
    "``payload`` must be exactly ``length`` hex digits (no whitespace: ``bytes.fromhex`` alone would skip it)"
    if not isinstance(payload, str) or len(payload) != length:
        raise PayloadError(field, f"must be a hex string of {length} characters")
    if not _HEX.fullmatch(payload):
        raise PayloadError(field, "must contain only hex digits")
    return bytes.fromhex(payload)


def require_packed_bits(payload: Any, field: str, width: int) -> bytes:
    "``payload`` must be ``width`` bits packed as hex, most significant first, with the padding bits 0"
    raw = require_hex(payload, field, hex_length(width))
    padding = 8 * len(raw) - width
    if padding and raw[-1] & ((1 << padding) - 1):
        raise PayloadError(field, f"the last {padding} padding bits must be 0")
    return raw
