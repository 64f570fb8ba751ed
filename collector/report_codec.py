"""Compact stored form of report payloads, exact in both directions.

The wire payload of a unary-encoding report (SUE, OUE) is a hex string; stored as its bytes it takes half the
space.  OLH's ``[seed, y]`` becomes the 16 seed bytes followed by y (big-endian, as few bytes as it needs).
Integer payloads (GRR, Laplace, Duchi, Piecewise) are stored as SQLite integers.  Anything else, or a payload
whose compact form would not give back the very same JSON value (upper-case hex, say), is stored as canonical
JSON text: SQLite keeps a value's type per row, so ``decode_payload`` tells the forms apart by type alone and
no tag byte is needed.
"""

from __future__ import annotations

import json
from typing import Any

from client_sdk.spec import canonical_json

UNARY = frozenset(("sue", "oue"))
OLH_SEED_BYTES = 16


def encode_payload(mechanism: str, payload: Any) -> bytes | int | str:
    "The value to store for a payload that passed ``check_payload``"
    if mechanism in UNARY and type(payload) is str:
        raw = bytes.fromhex(payload)
        if raw.hex() == payload:
            return raw
    elif type(payload) is int:
        return payload
    elif mechanism == "olh" and type(payload) is list and len(payload) == 2:
        seed, y = payload
        if type(seed) is str and type(y) is int and y >= 0:
            raw = bytes.fromhex(seed)
            if len(raw) == OLH_SEED_BYTES and raw.hex() == seed:
                return raw + y.to_bytes((y.bit_length() + 7) // 8, "big")
    return canonical_json(payload)


def encode_payloads(mechanism: str, payloads: list[Any]) -> list[bytes | int | str]:
    "``encode_payload`` of each; the usual unary case (lower-case hex strings of one length) in one conversion"
    if mechanism in UNARY:
        whole = _unary_in_one_pass(payloads)
        if whole is not None:
            return whole
        out: list[bytes | int | str] = []
        for payload in payloads:
            if type(payload) is str:
                raw = bytes.fromhex(payload)
                if raw.hex() == payload:
                    out.append(raw)
                    continue
            out.append(canonical_json(payload))
        return out
    return [encode_payload(mechanism, payload) for payload in payloads]


def _unary_in_one_pass(payloads: list[Any]) -> list[bytes | int | str] | None:
    """The bytes of each payload if all are hex strings of one even length whose bytes give back the very same
    text (lower case, no spaces), converted together; None otherwise (then they are encoded one by one)"""
    try:
        joined = "".join(payloads)
    except TypeError:  # not all strings
        return None
    lengths = set(map(len, payloads))
    if len(lengths) != 1:
        return None
    length = lengths.pop()
    if length % 2:
        return None
    try:
        raw = bytes.fromhex(joined)
    except ValueError:
        return None
    if raw.hex() != joined:  # upper case or whitespace somewhere: stored as text, one by one
        return None
    size = length // 2
    return [raw[start:start + size] for start in range(0, len(raw), size)] if size else None


def decode_payload(mechanism: str, stored: bytes | int | str) -> Any:
    "The wire payload back from its stored form"
    if type(stored) is str:
        return json.loads(stored)
    if type(stored) is int:
        return stored
    if isinstance(stored, bytes) and mechanism in UNARY:
        return stored.hex()
    if isinstance(stored, bytes) and mechanism == "olh":
        return [stored[:OLH_SEED_BYTES].hex(), int.from_bytes(stored[OLH_SEED_BYTES:], "big")]
    raise ValueError(f"stored {mechanism!r} payload of type {type(stored).__name__} has no decoding")


# A server database (PostgreSQL) keeps one column type for every row: the stored form goes into bytea with a tag
# byte in front that says which of the three forms follows.
_RAW, _INT, _TEXT = b"\x00", b"\x01", b"\x02"


def tagged_bytes(stored: bytes | int | str) -> bytes:
    "An ``encode_payload`` value as tagged bytes"
    if type(stored) is bytes:
        return _RAW + stored
    if type(stored) is int:
        return _INT + str(stored).encode("ascii")
    return _TEXT + str(stored).encode("utf-8")


def untagged(data: bytes) -> bytes | int | str:
    "The ``encode_payload`` value back from ``tagged_bytes``"
    tag, body = data[:1], bytes(data[1:])
    if tag == _RAW:
        return body
    if tag == _INT:
        return int(body.decode("ascii"))
    if tag == _TEXT:
        return body.decode("utf-8")
    raise ValueError(f"stored payload has an unknown tag {tag!r}")
