"""The incremental SSE parser: line ends, chunk boundaries, comments, multi-line data, padding."""

from __future__ import annotations

import pytest

from modelport.core import SSEEvent, SSEParser, format_sse, parse_sse
from tests.support.cassettes import interactions, sse_file

BODY = (
    b": keep-alive comment\r\n"
    b"event: message_start\r\n"
    b'data: {"a": 1}   \r\n'
    b"\r\n"
    b"data: line one\n"
    b"data: line two\n"
    b"id: 7\n"
    b"retry: 100\n"
    b"unknown: field\n"
    b"\n"
    b"data:no-space\r"
    b"\r"
    b"event: empty-is-not-dispatched\n"
    b"\n"
    b"data: [DONE]\n\n"
)

EXPECTED = [
    SSEEvent("message_start", '{"a": 1}   '),  # padding inside the line is kept (JSON ignores it)
    SSEEvent(None, "line one\nline two", "7"),
    SSEEvent(None, "no-space", "7"),  # the last event id persists, as the SSE spec says
    SSEEvent(None, "[DONE]", "7"),
]


def _feed_in(chunks: list[bytes]) -> list[SSEEvent]:
    parser = SSEParser()
    events = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    return events + parser.close()


def test_whole_body() -> None:
    assert parse_sse(BODY) == EXPECTED


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64])
def test_any_chunking_gives_the_same_events(size: int) -> None:
    chunks = [BODY[i : i + size] for i in range(0, len(BODY), size)]
    assert _feed_in(chunks) == EXPECTED


def test_crlf_split_between_chunks_is_one_line_end() -> None:
    events = _feed_in([b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"])
    assert [e.data for e in events] == ["a", "b"]


def test_multibyte_utf8_split_between_chunks() -> None:
    raw = 'data: {"t": "café 東京"}\n\n'.encode()
    cut = raw.index("東".encode()) + 1
    assert [e.data for e in _feed_in([raw[:cut], raw[cut:]])] == ['{"t": "café 東京"}']


def test_bom_and_missing_final_blank_line() -> None:
    assert [e.data for e in parse_sse(b"\xef\xbb\xbfdata: x\n\ndata: tail")] == ["x", "tail"]


def test_format_round_trips() -> None:
    frame = format_sse("one\ntwo", event="ev")
    assert frame == b"event: ev\ndata: one\ndata: two\n\n"
    assert parse_sse(frame) == [SSEEvent("ev", "one\ntwo")]


def test_recorded_bodies_parse_to_their_data_lines() -> None:
    """Every recorded stream: parsed events equal the data lines counted independently."""
    bodies = [
        it.sse_body
        for proto in ("openai_chat", "openai_responses", "anthropic_messages")
        for it in interactions(proto)
        if it.status == 200 and it.is_sse
    ]
    bodies.append(sse_file("anthropic-sdk-python", "lib-streaming-fixtures", "basic_response.txt"))
    assert len(bodies) >= 10
    for body in bodies:
        data_lines = [line for line in body.splitlines() if line.startswith("data:")]
        events = parse_sse(body)
        assert len(events) == len(data_lines)
        assert [e.data for e in events] == [line[5:].removeprefix(" ") for line in data_lines]
        named = [line[6:].strip() for line in body.splitlines() if line.startswith("event:")]
        if named:
            assert [e.event for e in events] == named


# Whole `data:` and `event:`+`data:` events (parsed a whole event at a time) mixed with every shape that is
# parsed line by line, `\n` line ends only (the whole-event path needs them).
MIXED = (
    b'data: {"a":1}\n\n'
    b"event: x\ndata: y\n\n"
    b"event:z\ndata:w\n\n"
    b": comment\n"
    b"data: a\ndata: b\n\n"
    b"id: 7\n"
    b"event: q\n"
    b"data\n\n"
    b"event: e\nid: 3\ndata: d\n\n"
    b"event: \ndata: no name\n\n"
    b"data:  two spaces\n\n"
    b"event: a\nevent: b\ndata: c\n\n"
    b"datax: 1\n\n"
    b"data: \xc3\xa9\n\n"
)
MIXED_EXPECTED = [
    SSEEvent(None, '{"a":1}'),
    SSEEvent("x", "y"),
    SSEEvent("z", "w"),
    SSEEvent(None, "a\nb"),
    SSEEvent("q", "", "7"),
    SSEEvent("e", "d", "3"),
    SSEEvent(None, "no name", "3"),
    SSEEvent(None, " two spaces", "3"),
    SSEEvent("b", "c", "3"),
    SSEEvent(None, "\u00e9", "3"),
]


def test_whole_events_and_line_by_line_agree_at_every_split() -> None:
    assert parse_sse(MIXED) == MIXED_EXPECTED
    for cut in range(1, len(MIXED)):
        for second in (cut, min(len(MIXED), cut + 7)):
            parser = SSEParser()
            events = [*parser.feed(MIXED[:cut]), *parser.feed(MIXED[cut:second]), *parser.feed(MIXED[second:])]
            assert events + parser.close() == MIXED_EXPECTED, (cut, second)
