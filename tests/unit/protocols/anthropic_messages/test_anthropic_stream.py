"""Messages stream encoder and decoder on canonical streams the recordings do not show: parts from other
protocols (interleaved parallel tool calls, refusals, OpenAI reasoning), mid-stream failures, and odd
upstream input the decoder must survive."""

from __future__ import annotations

import json
from typing import Any

from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import Message, RawMessageStreamEvent
from pydantic import TypeAdapter

from modelport.core import (
    Finish,
    PartEnd,
    ReasoningDelta,
    RefusalDelta,
    ResponseStart,
    StopReason,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallStart,
    Usage,
    UsageUpdate,
    parse_sse,
)
from modelport.protocols.anthropic_messages import CODEC, MessagesStreamDecoder, MessagesStreamEncoder
from modelport.protocols.reasoning_carry import unwrap_openai

_EVENT = TypeAdapter(RawMessageStreamEvent)


def encode(events: list[StreamEvent]) -> bytes:
    encoder = CODEC.stream_encoder("openai/gpt-test", "chatcmpl-abc", include_usage=True)
    return b"".join(encoder.encode(e) for e in events) + encoder.close()


def frames(stream: bytes) -> list[dict[str, Any]]:
    out = []
    for sse in parse_sse(stream):
        payload = json.loads(sse.data)
        assert sse.event == payload["type"]
        out.append(payload)
    return out


def sdk_message(stream: bytes) -> Message:
    snapshot = None
    bufs: dict[int, bytes] = {}
    for payload in frames(stream):
        if payload["type"] != "ping":
            snapshot = accumulate_event(
                event=_EVENT.validate_python(payload), current_snapshot=snapshot, json_bufs=bufs
            )
    assert snapshot is not None
    return Message.model_validate(snapshot.model_dump())


def block_sequence(stream: bytes) -> list[tuple[str, int]]:
    return [(p["type"], p["index"]) for p in frames(stream) if p["type"].startswith("content_block")]


def test_interleaved_parallel_tool_calls_become_sequential_blocks() -> None:
    # The Chat Completions shape: both calls start, then their argument fragments interleave.
    events: list[StreamEvent] = [
        ResponseStart("chatcmpl-abc", "gpt"),
        ToolCallStart(0, "call_a", "weather"),
        ToolCallDelta(0, '{"city": '),
        ToolCallStart(1, "call_b", "weather"),
        ToolCallDelta(1, '{"city": "Ro'),
        ToolCallDelta(0, '"Paris"}'),
        ToolCallDelta(1, 'me"}'),
        Finish(StopReason.TOOL_USE),
        UsageUpdate(Usage(input_tokens=50, output_tokens=20, cache_read_tokens=10)),
    ]
    stream = encode(events)
    assert block_sequence(stream) == [
        ("content_block_start", 0),
        ("content_block_delta", 0),
        ("content_block_delta", 0),
        ("content_block_stop", 0),
        ("content_block_start", 1),
        ("content_block_delta", 1),
        ("content_block_delta", 1),
        ("content_block_stop", 1),
    ]
    message = sdk_message(stream)
    assert [(b.type, getattr(b, "id", None), getattr(b, "input", None)) for b in message.content] == [
        ("tool_use", "call_a", {"city": "Paris"}),
        ("tool_use", "call_b", {"city": "Rome"}),
    ]
    assert message.stop_reason == "tool_use"
    assert message.id == "msg_chatcmplabc" and message.model == "openai/gpt-test"
    u = message.usage
    assert (u.input_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens, u.output_tokens) == (
        40,
        10,
        0,
        20,
    )


def test_part_end_releases_waiting_blocks_in_order() -> None:
    events: list[StreamEvent] = [
        ToolCallStart(0, "a", "f"),
        ToolCallStart(1, "b", "g"),
        ToolCallDelta(1, "{}"),
        PartEnd(1),
        ToolCallStart(2, "c", "h"),
        ToolCallDelta(0, '{"x": 1}'),
        PartEnd(0),  # releases 1 (already ended) and then 2 (still open)
        ToolCallDelta(2, '{"y": 2}'),
        PartEnd(2),
        Finish(StopReason.TOOL_USE),
    ]
    message = sdk_message(encode(events))
    assert [(b.name, b.input) for b in message.content if b.type == "tool_use"] == [
        ("f", {"x": 1}),
        ("g", {}),
        ("h", {"y": 2}),
    ]


def test_text_closes_when_the_next_part_starts() -> None:
    events: list[StreamEvent] = [
        TextDelta(0, "Let me "),
        TextDelta(0, "check."),
        ToolCallStart(1, "call_1", "lookup"),
        ToolCallDelta(1, '{"q": "x"}'),
        Finish(StopReason.TOOL_USE),
    ]
    stream = encode(events)
    # The text block is stopped before the tool block starts, without waiting for the end of the stream.
    assert block_sequence(stream)[:4] == [
        ("content_block_start", 0),
        ("content_block_delta", 0),
        ("content_block_delta", 0),
        ("content_block_stop", 0),
    ]
    message = sdk_message(stream)
    assert message.content[0].type == "text" and message.content[0].text == "Let me check."


def test_message_start_carries_input_usage_reported_after_the_upstream_start() -> None:
    usage = Usage(input_tokens=1532, output_tokens=1, cache_read_tokens=1111, cache_write_tokens=418)
    stream = encode(
        [ResponseStart("msg_1", "claude"), UsageUpdate(usage), TextDelta(0, "hi"), Finish(StopReason.END_TURN)]
    )
    payloads = frames(stream)
    assert [p["type"] for p in payloads] == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert payloads[0]["message"]["usage"] == {
        "input_tokens": 3,
        "cache_creation_input_tokens": 418,
        "cache_read_input_tokens": 1111,
        # No breakdown reported: every write is a 5-minute one (what Anthropic's own answers say).
        "cache_creation": {"ephemeral_5m_input_tokens": 418, "ephemeral_1h_input_tokens": 0},
        "output_tokens": 1,
    }


def test_reasoning_refusal_and_stop_details() -> None:
    events: list[StreamEvent] = [
        ReasoningDelta(index=0, id="rs_1", encrypted_content="gAAA"),  # OpenAI: no text, carried in the signature
        ReasoningDelta(index=1, text="Let me think"),
        ReasoningDelta(index=1, text="."),
        ReasoningDelta(index=1, signature="c2ln"),
        ReasoningDelta(index=2, redacted="opaque"),
        RefusalDelta(3, "I can't help with that."),
        Finish(StopReason.CONTENT_FILTER),
    ]
    message = sdk_message(encode(events))
    assert [b.type for b in message.content] == ["thinking", "thinking", "redacted_thinking", "text"]
    carried = unwrap_openai(message.content[0].signature)  # type: ignore[union-attr]
    assert carried is not None and (carried.id, carried.encrypted_content) == ("rs_1", "gAAA")
    assert (message.content[1].thinking, message.content[1].signature) == ("Let me think.", "c2ln")  # type: ignore[union-attr]
    assert message.content[2].data == "opaque"  # type: ignore[union-attr]
    assert message.stop_reason == "refusal"


def test_openai_reasoning_summary_gets_a_carried_signature_and_no_late_empty_block() -> None:
    """A Responses upstream's reasoning: summary text, then its encrypted content at item end, then the final
    response's re-encrypted copy after the block closed (which used to open an empty thinking block)."""
    events: list[StreamEvent] = [
        ReasoningDelta(index=0, id="rs_9"),
        ReasoningDelta(index=0, text="Plan."),
        ReasoningDelta(index=0, id="rs_9", encrypted_content="enc-1"),
        PartEnd(0),
        TextDelta(1, "Hi"),
        PartEnd(1),
        ReasoningDelta(index=0, encrypted_content="enc-2"),
        Finish(StopReason.END_TURN),
    ]
    message = sdk_message(encode(events))
    assert [b.type for b in message.content] == ["thinking", "text"]
    assert message.content[0].thinking == "Plan."  # type: ignore[union-attr]
    carried = unwrap_openai(message.content[0].signature)  # type: ignore[union-attr]
    assert carried is not None and (carried.id, carried.encrypted_content) == ("rs_9", "enc-1")


def test_stop_sequence_only_with_its_reason() -> None:
    message = sdk_message(encode([TextDelta(0, "The city of "), Finish(StopReason.STOP_SEQUENCE, "Paris")]))
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "Paris")
    message = sdk_message(encode([TextDelta(0, "x"), Finish(StopReason.END_TURN, "Paris")]))
    assert (message.stop_reason, message.stop_sequence) == ("end_turn", None)


def test_empty_stream_is_still_a_complete_message() -> None:
    message = sdk_message(encode([]))
    assert message.content == [] and message.stop_reason == "end_turn"
    assert message.usage.input_tokens == 0


def test_mid_stream_failure_is_an_error_event() -> None:
    encoder = MessagesStreamEncoder("anthropic/claude", "msg_1")
    head = encoder.encode(TextDelta(0, "partial"))
    tail = encoder.error("upstream connection reset")
    payloads = frames(head + tail)
    assert payloads[-1] == {"type": "error", "error": {"type": "api_error", "message": "upstream connection reset"}}
    assert tail.startswith(b"event: error\ndata: ")
    # Nothing follows the error.
    assert encoder.encode(TextDelta(0, "more")) == b"" and encoder.close() == b""


def test_stream_error_event_is_encoded_the_same_way() -> None:
    encoder = MessagesStreamEncoder("m", "msg_1")
    out = encoder.encode(StreamError("overloaded", "overloaded_error"))
    assert frames(out) == [{"type": "error", "error": {"type": "overloaded_error", "message": "overloaded"}}]


# --- decoder ------------------------------------------------------------------------------------------


def feed(decoder: MessagesStreamDecoder, payloads: list[Any]) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    for payload in payloads:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        events.extend(decoder.feed(None, data))
    return events


def test_decoder_survives_odd_input() -> None:
    decoder = MessagesStreamDecoder()
    events = feed(
        decoder,
        [
            "not json",
            "[1, 2]",
            {"type": "some_new_event", "x": 1},
            {"type": "content_block_delta", "index": 9, "delta": {"type": "text_delta", "text": "orphan"}},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "web_fetch_tool_result", "content": {}},
            },
            {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{}"}},
            {"type": "content_block_stop", "index": 0},
            {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 1, "delta": {"type": "citations_delta", "citation": {}}},
            {"type": "content_block_delta", "index": 1, "delta": {"type": "brand_new_delta"}},
            {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "ok"}},
            {"type": "message_delta", "delta": {"stop_reason": "model_context_window_exceeded"}, "usage": None},
            {"type": "message_delta", "delta": {"stop_reason": "some_future_reason"}, "usage": {"output_tokens": "x"}},
        ],
    )
    assert events[:2] == [TextDelta(0, ""), TextDelta(0, "ok")]
    assert Finish(StopReason.MAX_TOKENS) in events
    assert Finish(StopReason.END_TURN) in events
    assert decoder.close() == []


def test_decoder_reports_an_error_event() -> None:
    events = feed(
        MessagesStreamDecoder(), [{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}]
    )
    assert events == [StreamError("Overloaded", "overloaded_error")]


def test_tool_input_given_whole_in_the_start_block() -> None:
    # Some Messages-compatible servers send the complete input at block start and no deltas.
    start = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}},
    }
    decoder = MessagesStreamDecoder()
    assert feed(decoder, [start, {"type": "content_block_stop", "index": 0}]) == [
        ToolCallStart(0, "t1", "f"),
        ToolCallDelta(0, '{"a":1}'),
        PartEnd(0),
    ]
    cut = MessagesStreamDecoder()
    assert feed(cut, [start]) == [ToolCallStart(0, "t1", "f")]
    assert cut.close() == [ToolCallDelta(0, '{"a":1}')]
    # With deltas, the deltas are the input and the start block's copy is ignored.
    both = MessagesStreamDecoder()
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "input_json_delta", "partial_json": '{"a":2}'},
    }
    events = feed(both, [start, delta, {"type": "content_block_stop", "index": 0}])
    assert [e for e in events if isinstance(e, ToolCallDelta)] == [ToolCallDelta(0, '{"a":2}')]


def test_usage_sniffer_ignores_junk_and_folds_cumulative_usage() -> None:
    sniffer = CODEC.usage_sniffer()
    sniffer.feed("ping", '{"type": "ping"}')
    sniffer.feed(None, 'garbage with "usage" in it')
    assert sniffer.usage is None
    start = {
        "type": "message_start",
        "message": {"usage": {"input_tokens": 5, "cache_read_input_tokens": 100, "output_tokens": 1}},
    }
    sniffer.feed("message_start", json.dumps(start))
    sniffer.feed("message_delta", json.dumps({"type": "message_delta", "delta": {}, "usage": {"output_tokens": 30}}))
    sniffer.feed("message_delta", json.dumps({"type": "message_delta", "delta": {}, "usage": {"output_tokens": 42}}))
    assert sniffer.usage == Usage(input_tokens=105, output_tokens=42, cache_read_tokens=100)
