"""Whether the bytes read so far on a connection hold one whole HTTP/1.x request (head and body).

The worker's event loop (:class:`collector.server.CollectorWorker`) reads a request with non-blocking reads into a
:class:`RequestBuffer` and hands the connection to a thread only once :attr:`RequestBuffer.ready`, so a client that
sends its request slowly, or never finishes it, costs a buffer and a file descriptor, not a thread.

This checks the framing (how long the message is: RFC 9112 sections 6 and 7), not the rest of the head, which
gunicorn's parser reads in the thread from bytes that are all there.  Framing the parser would refuse is refused
here, so no thread ever waits on a request the loop took for complete, nor reads a malformed one:
:attr:`RequestBuffer.malformed` says why (400 for two ``Content-Length``, one that is not digits, one with
``Transfer-Encoding``, codings not ending in ``chunked``, a chunk-size line that is not ``1*HEXDIG [chunk-ext]``
within :data:`MAX_CHUNK_LINE` bytes, chunk data without its CRLF, a malformed trailer line; 501 for an unknown
transfer coding; 431 for a head or a trailer section above ``max_head``).  A body known to exceed ``max_body``
(its ``Content-Length``, or a chunk size) is :attr:`RequestBuffer.too_large` as soon as that is known.  The loop
answers all of these itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

_HEAD_END = re.compile(rb"\r?\n\r?\n")
_LEADING_EMPTY_LINES = re.compile(rb"(?:\r?\n)*")
# RFC 9112 7.1: chunk-size [ chunk-ext ], chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] ),
# a name a token and a value a token or a quoted-string (RFC 9110 5.6.2, 5.6.4)
_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED = rb'"(?:[\t !#-\[\]-~\x80-\xff]|\\[\t -~\x80-\xff])*"'
_CHUNK_LINE = re.compile(rb"([0-9A-Fa-f]+)(?:[ \t]*;[ \t]*" + _TOKEN + rb"(?:[ \t]*=[ \t]*(?:" + _TOKEN + rb"|"
                         + _QUOTED + rb"))?)*")
_HEX_DIGIT = frozenset(b"0123456789abcdefABCDEF")
_FIELD_LINE = re.compile(_TOKEN + rb":[\t\x20-\x7e\x80-\xff]*")  # RFC 9112 5: field-name ":" OWS field-value OWS
MAX_CHUNK_LINE = 1024  # bytes of a chunk-size line, extensions included, without its CRLF
MAX_SIZE_DIGITS = 16  # significant hex digits of a chunk size (2^64 - 1); more is over any body limit
MAX_LENGTH_DIGITS = 19  # significant digits of a Content-Length (below 2^63); more is over any body limit
TRANSFER_CODINGS = frozenset({b"chunked", b"identity", b"gzip", b"deflate", b"compress"})  # those gunicorn reads


@dataclass(frozen=True)
class Malformed:
    "Why a request's framing is refused: the status of the answer, what is wrong, and the header or part at fault"

    status: int
    detail: str
    field: str


class RequestBuffer:
    "The bytes of one request on its way in, and whether they are complete"

    def __init__(self, *, max_head: int, max_body: int) -> None:
        self.data = bytearray()
        self.max_head = max_head
        self.max_body = max_body
        self.head_end: int | None = None  # offset of the body's first byte
        self.body_length: int | None = None  # declared Content-Length, when the body is framed by one
        self.expects_continue = False  # "Expect: 100-continue" with the body still to come
        self.ready = False  # hand the connection to a thread
        self.too_large = False  # the body exceeds max_body (the request is not ready and never will be)
        self.malformed: Malformed | None = None  # the framing is refused (not ready, and never will be)
        self.method: str | None = None  # these three from the head, for the loop's own answers (CORS)
        self.path: str | None = None
        self.origin: str | None = None
        self._chunked = False
        self._chunk_at = 0  # where the next chunk-size (or trailer) line starts
        self._trailers_at: int | None = None  # where the trailer section starts, once the last chunk is read

    @property
    def head_too_large(self) -> bool:
        return (self.head_end if self.head_end is not None else len(self.data)) > self.max_head

    @property
    def refused(self) -> bool:
        "The loop answers this request itself (too large, or malformed)"
        return self.too_large or self.malformed is not None or self.head_too_large

    def feed(self, chunk: bytes) -> None:
        "Add bytes read from the connection and update :attr:`ready`"
        scan_from = max(0, len(self.data) - 3)
        self.data += chunk
        if self.ready or self.too_large or self.malformed is not None:
            return
        if self.head_end is None:  # (the bytes read may be more than max_head, body included: find the head first)
            start = _LEADING_EMPTY_LINES.match(self.data).end()  # type: ignore[union-attr]
            end = _HEAD_END.search(self.data, max(start, scan_from))
            if end is None:
                return
            self.head_end = end.end()
            if not self.head_too_large:
                self._read_head(bytes(self.data[start:end.start()]))
        if not self.ready and not self.refused:
            self._check_body()
        if self.ready or self.refused:
            self.expects_continue = False

    def _refuse(self, status: int, detail: str, field: str) -> None:
        self.malformed = Malformed(status, detail, field)

    def _read_head(self, head: bytes) -> None:
        lines = head.split(b"\n")
        request_line = lines[0].rstrip(b"\r").split(b" ")
        version_11 = request_line[-1] == b"HTTP/1.1"
        if len(request_line) == 3:
            self.method = request_line[0].decode("latin-1")
            try:
                self.path = unquote(urlsplit(request_line[1].decode("latin-1")).path)
            except ValueError:  # not a URL: the parser refuses it
                self.path = None
        lengths, codings, origins = [], [], []
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name, value = name.strip().lower(), value.strip()
            if name == b"content-length":
                lengths.append(value)
            elif name == b"transfer-encoding":
                codings += [coding.strip(b" \t").lower() for coding in value.split(b",")]
            elif name == b"origin":
                origins.append(value)
            elif name == b"expect" and value.lower() == b"100-continue":
                self.expects_continue = version_11  # an HTTP/1.0 expectation is ignored (RFC 9110 10.1.1)
        if len(origins) == 1:
            self.origin = origins[0].decode("latin-1")
        if codings:
            self._read_codings(codings, lengths, version_11)
        elif len(lengths) > 1:
            self._refuse(400, "more than one Content-Length", "Content-Length")
        elif lengths and not lengths[0].isdigit():
            self._refuse(400, "Content-Length must be decimal digits", "Content-Length")
        elif not lengths:
            self.body_length = 0
        elif len(lengths[0].lstrip(b"0")) > MAX_LENGTH_DIGITS:  # int() refuses over 4,300 digits: over any limit
            self.too_large = True
        else:
            self.body_length = int(lengths[0].lstrip(b"0") or b"0")
            self.too_large = self.body_length > self.max_body

    def _read_codings(self, codings: list[bytes], lengths: list[bytes], version_11: bool) -> None:
        "RFC 9112 6.1 and 6.3: a request's transfer codings end with chunked, once, and replace Content-Length"
        unknown = [coding for coding in codings if coding not in TRANSFER_CODINGS]
        if unknown:
            self._refuse(501, f"transfer coding {unknown[0][:40].decode('latin-1')!r} is not implemented",
                         "Transfer-Encoding")
        elif codings[-1] != b"chunked" or codings.count(b"chunked") != 1:
            self._refuse(400, "a request's transfer codings must end with chunked, applied once", "Transfer-Encoding")
        elif lengths:
            self._refuse(400, "Content-Length and Transfer-Encoding together", "Content-Length")
        elif not version_11:
            self._refuse(400, "Transfer-Encoding needs HTTP/1.1", "Transfer-Encoding")
        else:
            self._chunked = True
            self._chunk_at = self.head_end or 0

    def _check_body(self) -> None:
        assert self.head_end is not None
        if self._chunked:
            self._scan_chunks()
        elif len(self.data) - self.head_end >= (self.body_length or 0):
            self.ready = True

    def _scan_chunks(self) -> None:
        "RFC 9112 7.1: chunks up to the last, checked as they arrive (a line can be refused before its CRLF)"
        assert self.head_end is not None
        while self._trailers_at is None:
            at = self._chunk_at
            line_end = self.data.find(b"\r\n", at, at + MAX_CHUNK_LINE + 2)
            if line_end < 0:
                pending = self.data[at:at + MAX_CHUNK_LINE + 1]
                if len(pending) > MAX_CHUNK_LINE:
                    self._refuse(400, f"a chunk-size line is longer than {MAX_CHUNK_LINE} bytes", "body")
                elif (pending and pending[0] not in _HEX_DIGIT) or b"\n" in pending:
                    self._refuse(400, "a chunk-size line must be hex digits, then extensions after ';'", "body")
                return
            line = _CHUNK_LINE.fullmatch(self.data, at, line_end)
            if line is None:
                self._refuse(400, "a chunk-size line must be hex digits, then extensions after ';'", "body")
                return
            digits = line.group(1).lstrip(b"0")
            size = int(digits or b"0", 16) if len(digits) <= MAX_SIZE_DIGITS else self.max_body + 1
            data_end = line_end + 2 + size
            if size == 0:
                self._trailers_at = self._chunk_at = data_end
            elif data_end + 2 - self.head_end > self.max_body:
                self.too_large = True
                return
            elif self.data[data_end:data_end + 2] != b"\r\n"[:max(0, len(self.data) - data_end)]:
                self._refuse(400, "chunk data must end with CRLF where its size says", "body")
                return
            elif len(self.data) < data_end + 2:
                return  # the chunk is still arriving
            else:
                self._chunk_at = data_end + 2
        self._scan_trailers()

    def _scan_trailers(self) -> None:
        "RFC 9112 7.1.2: field lines after the last chunk, up to an empty line"
        assert self._trailers_at is not None
        while True:
            at = self._chunk_at
            limit = self._trailers_at + self.max_head
            line_end = self.data.find(b"\r\n", at, limit + 2)
            if line_end < 0:
                if len(self.data) > limit:
                    self._refuse(431, f"the trailer section is longer than {self.max_head} bytes", "trailers")
                elif b"\n" in self.data[at:]:
                    self._refuse(400, "a trailer line must end with CRLF", "trailers")
                return
            if line_end == at:
                self.ready = True
                return
            if _FIELD_LINE.fullmatch(self.data, at, line_end) is None:
                self._refuse(400, "a trailer line must be name: value", "trailers")
                return
            self._chunk_at = line_end + 2
