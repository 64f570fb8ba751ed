"""Reading a JSON request body safely: content type, optional gzip, size limits counted after decompression."""

from __future__ import annotations

import json
import zlib
from typing import Any

from flask import request

from ..problems import Problem, invalid

JSON_TYPES = ("application/json",)
READ_CHUNK = 64 * 1024


def read_body(max_bytes: int) -> bytes:
    "The raw (decompressed) body; 413 beyond ``max_bytes``, 415 for unknown content types or encodings"
    mimetype = request.mimetype
    if mimetype not in JSON_TYPES:
        raise Problem(415, f"Content-Type must be application/json, not {mimetype or 'missing'!r}",
                      field="Content-Type")
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("identity", "gzip"):
        raise Problem(415, f"Content-Encoding must be gzip or identity, not {encoding!r}", field="Content-Encoding")
    length = request.content_length
    if length is not None and length > max_bytes:
        raise Problem(413, f"body of {length} bytes exceeds the limit of {max_bytes} bytes", field="body")
    raw = request.get_data(cache=False)  # Flask's MAX_CONTENT_LENGTH has already bounded this read
    if len(raw) > max_bytes:
        raise Problem(413, f"body exceeds the limit of {max_bytes} bytes", field="body")
    if encoding == "gzip":
        raw = gunzip_bounded(raw, max_bytes)
    return raw


def gunzip_bounded(data: bytes, max_bytes: int) -> bytes:
    "Decompress gzip without ever holding more than ``max_bytes + 1`` bytes of output (gzip-bomb safe)"
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = bytearray()
    pending = data
    try:
        while pending:
            out += decompressor.decompress(pending, max_bytes + 1 - len(out))
            if len(out) > max_bytes:
                raise Problem(413, f"decompressed body exceeds the limit of {max_bytes} bytes", field="body")
            pending = decompressor.unconsumed_tail
            if decompressor.eof:
                break
        if not decompressor.eof:
            raise invalid("body", "truncated gzip stream")
        if decompressor.unused_data:
            raise invalid("body", "trailing data after the gzip stream")
    except zlib.error as exc:
        raise invalid("body", f"is not valid gzip ({exc})") from None
    return bytes(out)


def parse_json(raw: bytes) -> Any:
    "Parse JSON; 400 naming 'body' for anything that is not valid UTF-8 JSON"
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "must be UTF-8"
        raise invalid("body", f"is not valid JSON ({reason})") from None
    except RecursionError:
        raise invalid("body", "is nested too deeply") from None


def read_json(max_bytes: int) -> Any:
    return parse_json(read_body(max_bytes))
