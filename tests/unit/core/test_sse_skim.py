"""`SSESkimmer`: the stored-response keeper's search for a stream's final event finds exactly the events a
full parse finds from that event on, however the stream is cut into chunks, and parses nothing before it."""

from __future__ import annotations

import json

import pytest

from modelport.core import sse_skim
from modelport.core.sse import SSEEvent, parse_sse
from modelport.core.sse_skim import SSESkimmer
from modelport.protocols.openai_responses.stored import SERVER_STATE

MARKERS = SERVER_STATE.final_markers


def frame(kind: str, body: dict[str, object], line_end: str = "\n") -> str:
    data = json.dumps({"type": kind, **body})
    return f"event: {kind}{line_end}data: {data}{line_end}{line_end}"


def stream(line_end: str = "\n", delta_text: str = "hi") -> bytes:
    frames = [frame("response.created", {"response": {"id": "resp_1", "status": "in_progress"}}, line_end)]
    frames += [frame("response.output_text.delta", {"delta": delta_text}, line_end) for _ in range(3)]
    frames.append(frame("response.completed", {"response": {"id": "resp_1", "status": "completed"}}, line_end))
    return ("\ufeff" + "".join(frames)).encode()


def final_of(events: list[SSEEvent]) -> list[dict[str, object]]:
    return [r for e in events if (r := SERVER_STATE.final_response(e.event, e.data)) is not None]


def skim(chunks: list[bytes]) -> list[SSEEvent]:
    skimmer = SSESkimmer(MARKERS)
    return [event for chunk in chunks for event in skimmer.feed(chunk)]


@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_the_final_event_is_found_at_every_cut_into_two_and_three_chunks(line_end: str) -> None:
    body = stream(line_end)
    expected = final_of(parse_sse(body))
    assert expected == [{"id": "resp_1", "status": "completed"}]
    for cut in range(1, len(body)):
        assert final_of(skim([body[:cut], body[cut:]])) == expected, cut
        for second in range(cut + 1, len(body), 7):
            assert final_of(skim([body[:cut], body[cut:second], body[second:]])) == expected, (cut, second)


def test_events_before_the_final_one_are_not_parsed() -> None:
    body = stream()
    chunks = [body[i : i + 40] for i in range(0, len(body), 40)]
    events = skim(chunks)
    assert [e.event for e in events] == ["response.completed"]


def test_a_marker_in_the_text_starts_the_parsing_early_and_nothing_is_lost() -> None:
    body = stream(delta_text="the word response.completed")
    chunks = [body[i : i + 25] for i in range(0, len(body), 25)]
    events = skim(chunks)
    assert [e.event for e in events][-1] == "response.completed" and len(events) == 4
    assert final_of(events) == final_of(parse_sse(body))


def test_no_markers_parse_every_event_and_a_stream_without_a_final_event_yields_none() -> None:
    body = stream()
    everything = SSESkimmer(())
    assert everything.feed(body) == parse_sse(body)
    unfinished = body[: body.index(b"event: response.completed")]
    assert skim([unfinished[i : i + 30] for i in range(0, len(unfinished), 30)]) == []


def test_a_stream_without_boundaries_is_parsed_once_its_tail_passes_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sse_skim, "MAX_TAIL", 64)
    body = stream(line_end="\r")  # lone `\r` line ends: never cut at a boundary
    skimmer = SSESkimmer(MARKERS)
    events = [event for i in range(0, len(body), 16) for event in skimmer.feed(body[i : i + 16])]
    assert skimmer._parser is not None and len(skimmer._tail) == 0
    assert final_of(events) == final_of(parse_sse(body)) and len(events) >= 4
