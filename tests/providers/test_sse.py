"""The SSE parser against the specification's tricky cases and arbitrary chunkings."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pi_trio.providers._sse import SSEEvent, SSELimitError, SSEParser

BODY = (
    b"\xef\xbb\xbf: keep-alive\r\n"
    b"event: message_start\r\n"
    b'data: {"a":1}\r\n'
    b"\r\n"
    b"data: line one\n"
    b"data:line two\n"
    b"id: 7\n"
    b"\n"
    b": ping\r"
    b"\r"
    b"event: empty\n"
    b"\n"
    b"data: caf\xc3\xa9\r\n\r\n"
    b"data: [DONE]\n\n"
)

EXPECTED = [
    SSEEvent('{"a":1}', "message_start"),
    SSEEvent("line one\nline two", "message", id="7"),
    SSEEvent("café", "message", id="7"),
    SSEEvent("[DONE]", "message", id="7"),
]


def parse(chunks: list[bytes]) -> list[SSEEvent]:
    parser = SSEParser()
    events: list[SSEEvent] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    events.extend(parser.close())
    return events


def test_whole_body() -> None:
    assert parse([BODY]) == EXPECTED


def test_byte_at_a_time() -> None:
    assert parse([BODY[i : i + 1] for i in range(len(BODY))]) == EXPECTED


@given(st.lists(st.integers(min_value=0, max_value=len(BODY)), max_size=12))
def test_any_chunking(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    pieces = [BODY[a:b] for a, b in zip([0, *points], [*points, len(BODY)], strict=True)]
    assert parse(pieces) == EXPECTED


def test_comments_alone_produce_nothing() -> None:
    assert parse([b": keep-alive\n\n: again\r\n\r\n"]) == []


def test_cr_at_chunk_end_waits_for_lf() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: x\r") == []
    assert parser.feed(b"\n") == []
    assert parser.feed(b"\r\n") == [SSEEvent("x")]


def test_unterminated_event_at_close_is_dropped() -> None:
    # the specification discards an event that never got its blank line
    assert parse([b"data: done\n\ndata: half"]) == [SSEEvent("done")]


def test_field_without_colon_and_unknown_fields() -> None:
    assert parse([b"data\nfoo: bar\nretry: 50\n\n"]) == [SSEEvent("", retry=50)]


def test_a_long_line_in_many_chunks_is_scanned_once() -> None:
    """Each chunk of a long line used to rescan the whole buffer: quadratic in the line."""
    parser = SSEParser()
    data = b"data: " + b"x" * 200_000
    for i in range(0, len(data), 1024):
        assert parser.feed(data[i : i + 1024]) == []
        assert parser._scanned == len(parser._buffer)  # the next search starts past it
    events = parser.feed(b"\n\n")
    assert [len(e.data) for e in events] == [200_000]
    assert parser._scanned == 0


def test_line_and_event_limits_at_the_boundary() -> None:
    cap = 1000
    exact = b"data: " + b"x" * (cap - 6)  # a line of exactly cap bytes
    parser = SSEParser(max_event_bytes=cap)
    assert parser.feed(exact) == []
    assert parser.feed(b"\n\n") == [SSEEvent("x" * (cap - 6))]
    with pytest.raises(SSELimitError, match="a line longer than 1000 bytes"):
        SSEParser(max_event_bytes=cap).feed(exact + b"x")
    two_lines = SSEParser(max_event_bytes=cap)
    assert two_lines.feed(b"data: " + b"y" * 600 + b"\n") == []
    with pytest.raises(SSELimitError, match="an event larger than 1000 bytes"):
        two_lines.feed(b"data: " + b"y" * 600 + b"\n")
    # a blank line starts the count again
    again = SSEParser(max_event_bytes=cap)
    for _ in range(5):
        assert len(again.feed(b"data: " + b"z" * 600 + b"\n\n")) == 1
