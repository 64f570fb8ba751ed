"""Whether the bytes read so far on a connection hold one whole HTTP/1.x request (head and body).

The worker's event loop (:class:`collector.server.CollectorWorker`) reads a request with non-blocking reads into a
:class:`RequestBuffer` and hands the connection to a thread only once :attr:`RequestBuffer.ready`, so a client that
sends its request slowly, or never finishes it, costs a buffer and a file descriptor, not a thread.

This is a framing check only, not a parser: whatever it cannot frame (a malformed ``Content-Length``, an unknown
transfer coding, both ``Content-Length`` and ``Transfer-Encoding``) is handed over as it is, and gunicorn's parser
answers it with a 400 without reading further.  A body known to exceed ``max_body`` (its ``Content-Length``, or a
chunk size) is :attr:`RequestBuffer.too_large` as soon as that is known: the loop answers 413 itself.
"""

from __future__ import annotations

import re

_HEAD_END = re.compile(rb"\r?\n\r?\n")
_LEADING_EMPTY_LINES = re.compile(rb"(?:\r?\n)*")


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
        self._chunked = False
        self._chunk_at = 0  # where the next chunk-size line starts

    @property
    def head_too_large(self) -> bool:
        return self.head_end is None and len(self.data) > self.max_head

    def feed(self, chunk: bytes) -> None:
        "Add bytes read from the connection and update :attr:`ready`"
        scan_from = max(0, len(self.data) - 3)
        self.data += chunk
        if self.ready or self.too_large:
            return
        if self.head_end is None:
            start = _LEADING_EMPTY_LINES.match(self.data).end()  # type: ignore[union-attr]
            end = _HEAD_END.search(self.data, max(start, scan_from))
            if end is None:
                return
            self.head_end = end.end()
            self._read_head(bytes(self.data[start:end.start()]))
        if not self.ready and not self.too_large:
            self._check_body()
        if self.ready or self.too_large:
            self.expects_continue = False

    def _read_head(self, head: bytes) -> None:
        lines = head.split(b"\n")
        version_11 = lines[0].rstrip(b"\r").endswith(b"HTTP/1.1")
        lengths, codings = [], []
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name, value = name.strip().lower(), value.strip()
            if name == b"content-length":
                lengths.append(value)
            elif name == b"transfer-encoding":
                codings.append(value.lower())
            elif name == b"expect" and value.lower() == b"100-continue":
                self.expects_continue = version_11  # an HTTP/1.0 expectation is ignored (RFC 9110 10.1.1)
        if codings and not lengths and codings[-1].rsplit(b",", 1)[-1].strip() == b"chunked":
            self._chunked = True
            self._chunk_at = self.head_end or 0
        elif codings or len(lengths) > 1 or (lengths and not lengths[0].isdigit()):
            self.ready = True  # the parser refuses it: no need to wait for a body
        elif lengths:
            self.body_length = int(lengths[0])
            self.too_large = self.body_length > self.max_body
        else:
            self.body_length = 0

    def _check_body(self) -> None:
        assert self.head_end is not None
        if self._chunked:
            self._scan_chunks()
        elif len(self.data) - self.head_end >= (self.body_length or 0):
            self.ready = True

    def _scan_chunks(self) -> None:
        assert self.head_end is not None
        while True:
            line_end = self.data.find(b"\r\n", self._chunk_at)
            if line_end < 0:
                self.ready = len(self.data) - self._chunk_at > 1024  # a chunk-size line this long is malformed
                return
            size_text = bytes(self.data[self._chunk_at:line_end]).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                self.ready = True  # malformed: the parser answers it
                return
            if size == 0:  # the last chunk; the trailer section ends with an empty line
                self.ready = self.data.find(b"\r\n\r\n", line_end) >= 0
                return
            self._chunk_at = line_end + 2 + size + 2
            if self._chunk_at - self.head_end > self.max_body:
                self.too_large = True
                return
            if self._chunk_at > len(self.data):
                return
