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


@pytest.mark.parametrize(("header", "status", "field"), [
    (b"Content-Length: 5x", 400, "Content-Length"), (b"Content-Length: -5", 400, "Content-Length"),
    (b"Content-Length: 1\r\nContent-Length: 1", 400, "Content-Length"),
    (b"Transfer-Encoding: gzip", 400, "Transfer-Encoding"), (b"Transfer-Encoding: chunked, gzip", 400,
                                                              "Transfer-Encoding"),
    (b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked", 400, "Transfer-Encoding"),
    (b"Transfer-Encoding: chunked\r\nContent-Length: 3", 400, "Content-Length"),
    (b"Transfer-Encoding: foo, chunked", 501, "Transfer-Encoding"), (b"Transfer-Encoding: ", 501,
                                                                      "Transfer-Encoding"),
])
def test_framing_the_parser_would_refuse_is_refused_at_once(header, status, field):
    "The loop answers it itself (a thread would be handed a request it refuses, or one it waits on)"
    incoming = fed(b"POST / HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n\r\n")
    assert not incoming.ready and incoming.refused
    assert (incoming.malformed.status, incoming.malformed.field) == (status, field)


def test_chunked_framing_needs_http_1_1_and_may_follow_other_codings():
    head = b"POST / HTTP/1.%d\r\nTransfer-Encoding: %s\r\n\r\n0\r\n\r\n"
    assert fed(head % (0, b"chunked")).malformed.field == "Transfer-Encoding"
    assert fed(head % (1, b"gzip, Chunked")).ready  # as gunicorn's parser reads it


@pytest.mark.parametrize("length", [b"9" * 5000, b"18446744073709551621", b"0" * 5000 + b"101"])
def test_a_content_length_above_any_integer_is_too_large_not_an_error(length):
    "int() refuses decimal strings over 4,300 digits: a ValueError in the event loop ended the worker"
    incoming = fed(b"POST / HTTP/1.1\r\nContent-Length: " + length + b"\r\n\r\n", max_head=10_000)
    assert incoming.too_large and not incoming.ready
    assert fed(b"POST / HTTP/1.1\r\nContent-Length: " + b"0" * 5000 + b"1\r\n\r\nx", max_head=10_000).ready


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
    assert fed(head, b"zz\r\n").malformed.status == 400
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


CHUNKED_HEAD = b"POST /v1/reports HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"


@pytest.fixture
def returns_promptly():
    "Fail a test whose feed() does not return (a chunk size that moved the scan backwards looped forever)"
    import signal

    def hung(*_):
        raise AssertionError("feed() did not return")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, 10)
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("body", [
    b"-6\r\nabc\r\n0\r\n\r\n", b"-7\r\n", b"-1\r\n", b"+5\r\nabcde\r\n0\r\n\r\n", b"1_0\r\n" + b"a" * 16 + b"\r\n",
    b"0x5\r\nabcde\r\n0\r\n\r\n", b" 5\r\nabcde\r\n0\r\n\r\n", b"5 \r\nabcde\r\n0\r\n\r\n", b"\r\nabc",
    b"5;\r\nabcde\r\n0\r\n\r\n", b"5;a=\r\nabcde\r\n0\r\n\r\n", b'5;a="unterminated\r\nabcde\r\n0\r\n\r\n',
    b"5;a b\r\nabcde\r\n0\r\n\r\n", b"5\nabcde\n0\n\n", b"5\r\nabcdeXY0\r\n\r\n", b"5\r\nabcdefg\r\n0\r\n\r\n",
    b"\xd9\xa5\r\nabcde\r\n0\r\n\r\n",  # a non-ASCII digit
    b"-", b"5\n",  # refused before the line's CRLF arrives
    b"0\r\nbad trailer\r\n\r\n", b"0\r\nX-A: 1\nX-B: 2\r\n\r\n", b"0\r\n: no name\r\n\r\n",
])
def test_hostile_chunk_framing_is_refused_400(body, returns_promptly):
    "RFC 9112 7.1: a chunk-size line is 1*HEXDIG then extensions after ';', a chunk ends with CRLF"
    incoming = fed(CHUNKED_HEAD, body, max_body=1000)
    assert incoming.malformed is not None and incoming.malformed.status == 400, incoming.malformed
    assert not incoming.ready and incoming.refused


def test_a_chunk_size_line_is_bounded_whether_or_not_its_end_has_arrived(returns_promptly):
    from collector.request_buffer import MAX_CHUNK_LINE

    long_extension = b"5;x=" + b"a" * (MAX_CHUNK_LINE - 4)  # MAX_CHUNK_LINE bytes: the longest line allowed
    assert fed(CHUNKED_HEAD, long_extension + b"\r\nabcde\r\n0\r\n\r\n", max_body=10_000).ready
    for line in (long_extension + b"a", b"0" * (MAX_CHUNK_LINE + 1) + b"5", b"5;x=" + b"a" * 8000):
        for end in (b"", b"\r\nabcde\r\n0\r\n\r\n"):  # still arriving (it used to go to a thread), or whole
            incoming = fed(CHUNKED_HEAD, line + end, max_body=10_000)
            assert incoming.malformed is not None and incoming.malformed.status == 400 and not incoming.ready


@pytest.mark.parametrize("size", [b"65", b"10000000000000000", b"ffffffffffffffffffffffff5", b"0" * 900 + b"65"])
def test_chunk_sizes_above_the_limit_or_any_integer_are_too_large(size, returns_promptly):
    "An overflowing size is too large, never wrapped around to a small one (2^64 + 5 is not 5)"
    incoming = fed(CHUNKED_HEAD, size + b"\r\nabcde\r\n0\r\n\r\n")
    assert incoming.too_large and not incoming.ready and incoming.malformed is None


def test_extensions_leading_zeros_and_trailers_are_read_as_rfc_9112_allows():
    body = b'05;name;x=1 ; y = "a \\" b"\r\nabcde\r\nA\r\n0123456789\r\n000;last\r\nX-Sum: 1\r\nX-B:\r\n\r\n'
    incoming = fed(CHUNKED_HEAD, body, max_body=1000)
    assert incoming.ready and incoming.malformed is None
    one_byte_at_a_time = RequestBuffer(max_head=1024, max_body=1000)
    for at in range(len(CHUNKED_HEAD + body)):
        assert not one_byte_at_a_time.ready and not one_byte_at_a_time.refused
        one_byte_at_a_time.feed((CHUNKED_HEAD + body)[at:at + 1])
    assert one_byte_at_a_time.ready


def test_a_body_that_ends_mid_chunk_is_not_complete_and_not_ended_by_data_that_looks_like_a_last_chunk():
    incoming = fed(CHUNKED_HEAD, b"a\r\n0\r\n\r\n", max_body=1000)  # 10 bytes of data, 5 of them arrived
    assert not incoming.ready and not incoming.refused
    incoming.feed(b"abcde\r\n0\r\n\r\n")
    assert incoming.ready


def test_a_trailer_section_is_bounded_by_the_head_limit():
    incoming = fed(CHUNKED_HEAD, b"0\r\n" + b"X-A: 1\r\n" * 20, max_head=100, max_body=1000)
    assert incoming.malformed is not None and incoming.malformed.status == 431 and not incoming.ready


def test_a_whole_head_above_the_limit_is_too_large_even_when_it_arrives_at_once():
    incoming = fed(b"GET / HTTP/1.1\r\nX: " + b"a" * 100 + b"\r\n\r\n", max_head=100)
    assert incoming.head_too_large and not incoming.ready


def test_a_short_head_read_at_once_with_more_body_than_the_head_limit_is_not_too_large():
    "A pipelined request handed back to the loop can arrive whole, in one piece longer than max_head"
    incoming = fed(b"POST / HTTP/1.1\r\nContent-Length: 200\r\n\r\n" + b"x" * 200, max_head=100, max_body=1000)
    assert incoming.ready and not incoming.head_too_large


def test_the_head_names_the_method_path_and_origin_for_the_loops_own_answers():
    incoming = fed(b"POST /v1/rep%6Frts?x=1 HTTP/1.1\r\nOrigin: https://a.example\r\nContent-Length: 101\r\n\r\n")
    assert (incoming.method, incoming.path, incoming.origin) == ("POST", "/v1/reports", "https://a.example")
