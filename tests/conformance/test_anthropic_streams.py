"""Messages streams: recorded SSE → canonical events → accumulated answer and re-encoded SSE.

Facts of each recorded stream (text, thinking and signatures, redacted thinking, tool-call input JSON,
stop reason, cumulative usage incl. cache counters) are read here straight from the raw ``data:`` lines,
independently of the codec, then compared with:
- the `StreamAccumulator` fold of the decoded events;
- the stream our encoder writes for those events: every frame is ``event: <type>`` + JSON of that type,
  validates as the SDK's `RawMessageStreamEvent` (``ping`` aside), and the SDK's own accumulator
  (`accumulate_event`) builds a message with the same facts from it;
- the fast-path usage sniffer.
Blocks the canonical model has no form for (server tools, search results, compaction, fallback) are
skipped by the decoder; the facts only count the blocks it maps.
"""

from __future__ import annotations

import json
from typing import Any

import jiter
import pytest
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import Message, RawMessageStreamEvent
from pydantic import TypeAdapter

from modelport.core import (
    PartEnd,
    ReasoningPart,
    ResponseStart,
    StopReason,
    StreamAccumulator,
    StreamError,
    StreamEvent,
    TextPart,
    ToolCallPart,
    UsageUpdate,
    parse_sse,
)
from modelport.protocols.anthropic_messages import CODEC
from tests.support.cassettes import interactions, sse_file

_EVENT = TypeAdapter(RawMessageStreamEvent)
_SDK_FIXTURES = [
    ("lib-streaming-fixtures", "basic_response.txt"),
    ("lib-streaming-fixtures", "tool_use_response.txt"),
    ("lib-streaming-fixtures", "incomplete_partial_json_response.txt"),
    ("lib-streaming-fixtures", "refusal_response.txt"),
    ("lib-streaming-fixtures", "compaction_response.txt"),
    ("lib-streaming-fixtures", "fallback_response.txt"),
    ("lib-streaming-fixtures", "fallback_credit_response.txt"),
    ("fable-fallback", "stream-a-refusal.sse"),
    ("fable-fallback", "stream-a-toolrefusal.sse"),
    ("fable-fallback", "stream-b-fallback.sse"),
]


def _load_streams() -> dict[str, str]:
    streams = {
        it.id: it.sse_body
        for it in interactions("anthropic_messages", path="/v1/messages")
        if it.status == 200 and it.is_sse
    }
    for folder, name in _SDK_FIXTURES:
        streams[name] = sse_file("anthropic-sdk-python", folder, name)
    return streams


STREAMS = _load_streams()


def test_recordings_cover_streams() -> None:
    assert len(STREAMS) >= 16


# --- facts straight from the wire -------------------------------------------------------------------


def _raw_events(body: str) -> list[dict[str, Any]]:
    """JSON payloads of a Messages SSE body, read without the codec or the core parser."""
    events = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(line[5:].strip() for line in block.split("\n") if line.startswith("data:"))
        if data:
            events.append(json.loads(data))
    return events


def _input_json(fragments: str) -> dict[str, Any]:
    value = jiter.from_json(fragments.encode(), partial_mode=True) if fragments else {}
    assert isinstance(value, dict)
    return value


def _wire_facts(body: str) -> dict[str, Any]:
    blocks: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] = {}
    stop = (None, None)
    for ev in _raw_events(body):
        if ev["type"] == "message_start":
            usage.update(ev["message"]["usage"])
        elif ev["type"] == "content_block_start":
            blocks[ev["index"]] = {**ev["content_block"], "json": ""}
        elif ev["type"] == "content_block_delta":
            block, delta = blocks[ev["index"]], ev["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            elif delta["type"] == "input_json_delta":
                block["json"] += delta["partial_json"]
        elif ev["type"] == "message_delta":
            stop = (ev["delta"]["stop_reason"], ev["delta"].get("stop_sequence"))
            # Cumulative: a value given here replaces the one from message_start.
            usage.update({k: v for k, v in ev["usage"].items() if v is not None})
    facts: list[tuple[Any, ...]] = []
    for _, block in sorted(blocks.items()):
        if block["type"] == "text":
            facts.append(("text", block["text"]))
        elif block["type"] == "thinking":
            facts.append(("thinking", block["thinking"], block["signature"]))
        elif block["type"] == "redacted_thinking":
            facts.append(("redacted", block["data"]))
        elif block["type"] == "tool_use":
            facts.append(("tool_use", block["id"], block["name"], block["json"]))
    return {
        "blocks": facts,
        "stop": stop,
        "usage": (
            usage["input_tokens"],
            usage["output_tokens"],
            usage.get("cache_creation_input_tokens") or 0,
            usage.get("cache_read_input_tokens") or 0,
        ),
    }


# --- the codec's view ---------------------------------------------------------------------------------


def _decode(body: str) -> list[StreamEvent]:
    decoder = CODEC.stream_decoder()
    events: list[StreamEvent] = []
    for sse in parse_sse(body):
        events.extend(decoder.feed(sse.event, sse.data))
    return events + decoder.close()


def _canonical_facts(events: list[StreamEvent]) -> dict[str, Any]:
    acc = StreamAccumulator()
    acc.feed_all(events)
    resp = acc.response()
    facts: list[tuple[Any, ...]] = []
    for part in resp.content:
        if isinstance(part, TextPart):
            facts.append(("text", part.text))
        elif isinstance(part, ReasoningPart) and part.redacted is not None:
            facts.append(("redacted", part.redacted))
        elif isinstance(part, ReasoningPart):
            facts.append(("thinking", part.text, part.signature or ""))
        elif isinstance(part, ToolCallPart):
            facts.append(("tool_use", part.id, part.name, part.arguments))
    assert resp.usage is not None
    u = resp.usage
    return {
        "blocks": facts,
        "stop": (resp.stop_reason, resp.stop_sequence),
        "usage": (u.uncached_input_tokens, u.output_tokens, u.cache_write_tokens, u.cache_read_tokens),
    }


@pytest.mark.parametrize("name", STREAMS)
def test_decoded_stream_accumulates_to_the_wire_facts(name: str) -> None:
    wire = _wire_facts(STREAMS[name])
    ours = _canonical_facts(_decode(STREAMS[name]))
    assert ours["usage"] == wire["usage"]
    assert ours["stop"] == (StopReason(wire["stop"][0]), wire["stop"][1])
    expected = [
        # Canonical tool calls carry the argument JSON text; a tool with no arguments has "" fragments only.
        (*b[:3], b[3] or "{}") if b[0] == "tool_use" and not b[3] else b
        for b in wire["blocks"]
    ]
    assert ours["blocks"] == expected


@pytest.mark.parametrize("name", STREAMS)
def test_decoded_stream_starts_once_and_indexes_parts_densely(name: str) -> None:
    events = _decode(STREAMS[name])
    assert isinstance(events[0], ResponseStart) and events[0].id.startswith("msg_")
    assert sum(isinstance(e, ResponseStart) for e in events) == 1
    indexes = sorted({e.index for e in events if hasattr(e, "index")})
    assert indexes == list(range(len(indexes)))
    assert not any(isinstance(e, StreamError) for e in events)


def _encode(events: list[StreamEvent]) -> bytes:
    encoder = CODEC.stream_encoder("anthropic/claude-test", "req-123", include_usage=False)
    return b"".join(encoder.encode(e) for e in events) + encoder.close()


def _sdk_accumulate(stream: bytes) -> tuple[Message, list[dict[str, Any]]]:
    snapshot = None
    bufs: dict[int, bytes] = {}
    payloads = []
    for sse in parse_sse(stream):
        payload = json.loads(sse.data)
        assert sse.event == payload["type"], "each frame is named after its payload type"
        payloads.append(payload)
        if payload["type"] == "ping":
            assert payload == {"type": "ping"}
            continue
        snapshot = accumulate_event(event=_EVENT.validate_python(payload), current_snapshot=snapshot, json_bufs=bufs)
    assert snapshot is not None
    return Message.model_validate(snapshot.model_dump()), payloads


@pytest.mark.parametrize("name", STREAMS)
def test_reencoded_stream_is_read_by_the_sdk_with_the_same_facts(name: str) -> None:
    wire = _wire_facts(STREAMS[name])
    message, payloads = _sdk_accumulate(_encode(_decode(STREAMS[name])))

    assert [p["type"] for p in payloads][:1] == ["message_start"]
    assert [p["type"] for p in payloads][-2:] == ["message_delta", "message_stop"]
    # Blocks are sequential on the wire: each start is matched by its stop before the next start.
    open_block = None
    for p in payloads:
        if p["type"] == "content_block_start":
            assert open_block is None
            open_block = p["index"]
        elif p["type"] == "content_block_delta":
            assert p["index"] == open_block
        elif p["type"] == "content_block_stop":
            assert p["index"] == open_block
            open_block = None
    # Input usage is known at message_start, as on the real API.
    assert (
        payloads[0]["message"]["usage"]["input_tokens"]
        == _raw_events(STREAMS[name])[0]["message"]["usage"]["input_tokens"]
    )

    facts: list[tuple[Any, ...]] = []
    for block in message.content:
        if block.type == "text":
            facts.append(("text", block.text))
        elif block.type == "thinking":
            facts.append(("thinking", block.thinking, block.signature))
        elif block.type == "redacted_thinking":
            facts.append(("redacted", block.data))
        elif block.type == "tool_use":
            facts.append(("tool_use", block.id, block.name, block.input))
    expected = [(*b[:3], _input_json(b[3])) if b[0] == "tool_use" else b for b in wire["blocks"]]
    assert facts == expected
    assert (message.stop_reason, message.stop_sequence) == wire["stop"]
    u = message.usage
    assert (u.input_tokens, u.output_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens) == wire["usage"]


@pytest.mark.parametrize("name", STREAMS)
def test_usage_sniffer_matches_the_decoder(name: str) -> None:
    sniffer = CODEC.usage_sniffer()
    for sse in parse_sse(STREAMS[name]):
        sniffer.feed(sse.event, sse.data)
    updates = [e.usage for e in _decode(STREAMS[name]) if isinstance(e, UsageUpdate)]
    assert sniffer.usage == updates[-1]
    assert sniffer.usage is not None
    assert sniffer.usage.uncached_input_tokens == _wire_facts(STREAMS[name])["usage"][0]


def test_max_tokens_cut_inside_a_tool_call() -> None:
    """``incomplete_partial_json_response.txt``: the stream stops (max_tokens) inside a tool_use block
    that never gets its content_block_stop; the partial JSON is kept as is and never completes."""
    body = STREAMS["incomplete_partial_json_response.txt"]
    events = _decode(body)
    assert PartEnd(0) in events and PartEnd(1) not in events
    acc = StreamAccumulator()
    acc.feed_all(events)
    resp = acc.response()
    call = resp.tool_calls[0]
    fragments = "".join(
        e["delta"]["partial_json"] for e in _raw_events(body) if e["type"] == "content_block_delta" and e["index"] == 1
    )
    assert call.arguments == fragments
    with pytest.raises(ValueError):
        json.loads(call.arguments)
    assert resp.stop_reason == StopReason.MAX_TOKENS
    # The client still gets a well-formed stream and, non-stream, a tool_use with the parsed prefix.
    message, _ = _sdk_accumulate(_encode(events))
    assert message.content[1].type == "tool_use"
    assert message.content[1].input == _input_json(fragments)
    assert message.content[1].input["filename"] == "taxes.txt"
    body_out = CODEC.encode_response(resp, "m")
    assert body_out["content"][1]["input"] == _input_json(fragments)


def test_streamed_usage_is_cumulative_not_summed() -> None:
    """Recent recordings repeat input and cache counters in message_delta; they must not add up."""
    body = STREAMS["test_anthropic_model_thinking_part_redacted_stream#0"]
    raw = _raw_events(body)
    start, delta = raw[0]["message"]["usage"], next(e for e in raw if e["type"] == "message_delta")["usage"]
    assert delta["input_tokens"] == start["input_tokens"]  # the data really repeats it
    final = [e.usage for e in _decode(body) if isinstance(e, UsageUpdate)][-1]
    assert final.input_tokens == start["input_tokens"]
    assert final.output_tokens == delta["output_tokens"]


def test_server_tool_blocks_are_skipped_but_the_client_tool_call_survives() -> None:
    body = STREAMS["test_anthropic_native_tool_search_streaming#0"]
    assert '"server_tool_use"' in body
    acc = StreamAccumulator()
    acc.feed_all(_decode(body))
    resp = acc.response()
    assert resp.stop_reason == StopReason.TOOL_USE
    [call] = resp.tool_calls
    assert json.loads(call.arguments) == {"from_currency": "USD", "to_currency": "EUR"}
