"""Reading a JSON request body safely: content type, optional gzip, size limits counted after decompression.

The body is read from the stream with a limit, so a chunked body (no Content-Length) over the limit is a 413, never
a silently truncated read; gzip output is bounded the same way.  ``count_items`` bounds the parsing work of a body
by its number of JSON items before ``json.loads`` runs.
"""

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
    raw = read_stream_bounded(max_bytes)
    if encoding == "gzip":
        raw = gunzip_bounded(raw, max_bytes)
    return raw


def read_stream_bounded(max_bytes: int) -> bytes:
    """The request body, read until its end or until it exceeds ``max_bytes`` (413).

    A chunked body has no Content-Length; a server that de-chunks it sets ``wsgi.input_terminated`` and the body
    is read from ``wsgi.input`` itself (Werkzeug's wrapper would stop quietly at the configured maximum, so an
    oversized body would look like a complete shorter one)."""
    environ = request.environ
    length = request.content_length
    if length is None and environ.get("wsgi.input_terminated"):
        stream = environ["wsgi.input"]
    else:
        stream = request.stream
        if length is not None and length <= max_bytes:  # the whole body in one read (no extra empty read)
            first = stream.read(length)
            if len(first) == length:
                return first
            out = bytearray(first)
            while chunk := stream.read(length - len(out)):
                out += chunk
            return bytes(out)
    out = bytearray()
    while True:
        chunk = stream.read(min(READ_CHUNK, max_bytes + 1 - len(out)))
        if not chunk:
            return bytes(out)
        out += chunk
        if len(out) > max_bytes:
            raise Problem(413, f"body exceeds the limit of {max_bytes} bytes", field="body")


def count_items(raw: bytes) -> int:
    """An upper bound on the number of values in a JSON text, found without parsing it.

    Every value of an array or object is preceded by ``[``, ``{``, ``,`` or ``:``, so their count bounds the values
    (strings holding these characters only make the bound looser); ``bytes.count`` costs about 1 ms per MB."""
    return 1 + sum(raw.count(token) for token in (b",", b"[", b"{", b":"))


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
    except ValueError:  # an integer of more than sys.get_int_max_str_digits() (4,300) digits
        raise invalid("body", "holds a number too large to read") from None


def read_json(max_bytes: int) -> Any:
    return parse_json(read_body(max_bytes))
