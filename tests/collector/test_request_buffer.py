"""collector.request_buffer: when the worker's event loop has a whole request to hand to a thread."""

from __future__ import annotations

import pytest

from collector.request_buffer import RequestBuffer


def fed(*pieces: bytes, max_head: int = 1024, max_body: int = 100) -> RequestBuffer:
    incoming = RequestBuffer(max_head=max_head, max_body=max_body)
    for piece in pieces:
        incoming.feed(piece)
    return incoming


def test_a_request_is_ready_once_its_head_and_declared_body_have_arrived():
    head = b"POST /v1/reports HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"
    assert not fed(b"POST /v1/reports HTTP/1.1\r\nHost: x\r\n").ready
    assert not fed(head).ready
    assert not fed(head, b"abcd").ready
    assert fed(head, b"abcd", b"e").ready
    assert fed(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n").ready


def test_the_end_of_the_head_is_found_across_reads_of_one_byte():
    request = b"\r\nGET /livez HTTP/1.1\r\nHost: x\r\n\r\n"  # one empty line before a request is allowed
    incoming = RequestBuffer(max_head=1024, max_body=100)
    for at in range(len(request)):
        assert not incoming.ready
        incoming.feed(request[at:at + 1])
    assert incoming.ready and incoming.head_end == len(request)


@pytest.mark.parametrize("header", [b"Content-Length: 5x", b"Content-Length: 1\r\nContent-Length: 1",
                                    b"Transfer-Encoding: gzip", b"Transfer-Encoding: chunked\r\nContent-Length: 3"])
def test_what_cannot_be_framed_goes_to_the_parser_at_once(header):
    assert fed(b"POST / HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n\r\n").ready


def test_a_body_above_the_limit_is_too_large_once_its_head_has_arrived():
    over = fed(b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 101\r\n\r\n")
    assert over.too_large and not over.ready and not over.expects_continue
    at_limit = fed(b"POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\n")
    assert not at_limit.too_large and not at_limit.ready


def test_a_chunked_body_is_ready_after_its_last_chunk_and_trailers():
    head = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert not fed(head, b"5\r\nabc").ready
    assert not fed(head, b"5\r\nabcde\r\n").ready
    assert not fed(head, b"5;x=1\r\nabcde\r\n0\r\n").ready
    assert fed(head, b"5;x=1\r\nabcde\r\n0\r\n\r\n").ready
    assert not fed(head, b"5\r\nabcde\r\n0\r\nX-Trailer: 1\r\n").ready
    assert fed(head, b"5\r\nabcde\r\n0\r\nX-Trailer: 1\r\n\r\n").ready
    assert fed(head, b"zz\r\n").ready  # malformed: the parser answers 400
    over = fed(head, b"65\r\n")  # a chunk of 101 bytes, over max_body: known before it arrives
    assert over.too_large and not over.ready


def test_a_head_without_end_is_too_large_past_the_limit():
    incoming = fed(b"GET / HTTP/1.1\r\nX: " + b"a" * 100, max_head=100)
    assert incoming.head_too_large and not incoming.ready
    assert not fed(b"GET / HTTP/1.1\r\nX: " + b"a" * 80, max_head=100).head_too_large


def test_a_continue_is_expected_only_while_an_http_1_1_body_is_missing():
    head = b"POST / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n"
    assert fed(head).expects_continue
    assert not fed(head, b"ab").expects_continue
    assert not fed(head.replace(b"HTTP/1.1", b"HTTP/1.0")).expects_continue
