"""Responses stream encoder on canonical events from other upstream kinds (Chat, Messages): order,
sequence numbers, item grouping, terminal events and errors. Every frame is checked against its
``ResponseStreamEvent`` member schema."""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from typing import Any

from modelport.core import (
    CanonicalRequest,
    CanonicalResponse,
    Finish,
    Message,
    PartEnd,
    ReasoningDelta,
    ReasoningPart,
    RefusalDelta,
    ResponseStart,
    StopReason,
    StreamAccumulator,
    StreamError,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolCallPart,
    ToolCallStart,
    ToolSpec,
    Usage,
    UsageUpdate,
    events_from_response,
    parse_sse,
)
from modelport.protocols.openai_responses import CODEC
from tests.support.openapi_schema import assert_valid, load_spec

USAGE = Usage(input_tokens=10, output_tokens=5, cache_read_tokens=4, reasoning_tokens=2)


@cache
def _schemas() -> dict[str, str]:
    schemas = load_spec()["components"]["schemas"]
    out = {}
    for ref in schemas["ResponseStreamEvent"]["anyOf"]:
        name = ref["$ref"].rsplit("/", 1)[-1]
        out[schemas[name]["properties"]["type"]["enum"][0]] = name
    return out


def _run(events: list[StreamEvent], *, request: CanonicalRequest | None = None) -> list[dict[str, Any]]:
    encoder = CODEC.stream_encoder("openai/gpt-4o", "resp_abc", True, request=request)
    body = b"".join(encoder.encode(e) for e in events) + encoder.close()
    return _frames(body)


def _frames(body: bytes) -> list[dict[str, Any]]:
    payloads = []
    for sse in parse_sse(body):
        payload = json.loads(sse.data)
        assert sse.event == payload["type"]
        assert_valid(payload, _schemas()[payload["type"]])
        payloads.append(payload)
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
    return payloads


def _kinds(payloads: list[dict[str, Any]]) -> list[str]:
    return [p["type"].removeprefix("response.") for p in payloads]


def test_text_stream_has_the_api_event_order() -> None:
    payloads = _run(
        [
            ResponseStart("x", "m", 7),
            TextDelta(0, "Hel"),
            TextDelta(0, "lo"),
            Finish(StopReason.END_TURN),
            UsageUpdate(USAGE),
        ]
    )
    assert _kinds(payloads) == [
        "created",
        "in_progress",
        "output_item.added",
        "content_part.added",
        "output_text.delta",
        "output_text.delta",
        "output_text.done",
        "content_part.done",
        "output_item.done",
        "completed",
    ]
    final = payloads[-1]["response"]
    assert final["created_at"] == 7 and final["status"] == "completed"
    assert final["output"][0]["content"][0]["text"] == "Hello"
    assert final["usage"]["input_tokens_details"]["cached_tokens"] == 4
    assert final["usage"]["output_tokens_details"]["reasoning_tokens"] == 2
    assert "usage" not in payloads[0]["response"]


def test_chat_style_text_then_parallel_interleaved_calls_go_out_one_item_at_a_time() -> None:
    """A Chat upstream ends no part before the finish chunk and may interleave tool-call deltas."""
    events: list[StreamEvent] = [
        ResponseStart("chatcmpl-1", "gpt-4o"),
        TextDelta(0, "Checking."),
        ToolCallStart(1, "call_a", "f"),
        ToolCallDelta(1, '{"x"'),
        ToolCallStart(2, "call_b", "g"),
        ToolCallDelta(2, '{"y":2}'),
        ToolCallDelta(1, ":1}"),
        PartEnd(0),
        PartEnd(1),
        PartEnd(2),
        Finish(StopReason.TOOL_USE),
        UsageUpdate(USAGE),
    ]
    payloads = _run(events)
    items = [p for p in payloads if p["type"] == "response.output_item.done"]
    assert [i["output_index"] for i in items] == [0, 1, 2]
    assert [i["item"]["type"] for i in items] == ["message", "function_call", "function_call"]
    assert [(i["item"]["call_id"], i["item"]["arguments"]) for i in items[1:]] == [
        ("call_a", '{"x":1}'),
        ("call_b", '{"y":2}'),
    ]
    # No event of item 2 before item 1 is done.
    first_b = next(n for n, p in enumerate(payloads) if p.get("output_index") == 2)
    done_a = next(
        n for n, p in enumerate(payloads) if p["type"] == "response.output_item.done" and p["output_index"] == 1
    )
    assert first_b > done_a
    assert payloads[-1]["type"] == "response.completed"
    # Decoding our stream gives back the canonical answer.
    acc = StreamAccumulator()
    decoder = CODEC.stream_decoder()
    for p in payloads:
        acc.feed_all(decoder.feed(p["type"], json.dumps(p)))
    resp = acc.response()
    assert resp.text == "Checking."
    assert [(c.id, c.arguments) for c in resp.tool_calls] == [("call_a", '{"x":1}'), ("call_b", '{"y":2}')]
    # Our response objects echo the default `service_tier`, read back with the usage.
    assert resp.stop_reason is StopReason.TOOL_USE and resp.usage == dataclasses.replace(USAGE, service_tier="default")


def test_text_resumed_after_another_part_continues_in_a_new_item() -> None:
    payloads = _run([TextDelta(0, "a"), ReasoningDelta(index=1, text="hm"), TextDelta(0, "b")])
    done = [p["item"] for p in payloads if p["type"] == "response.output_item.done"]
    assert [i["type"] for i in done] == ["message", "reasoning", "message"]
    assert "".join(i["content"][0]["text"] for i in done if i["type"] == "message") == "ab"


def test_reasoning_from_messages_upstream_becomes_a_summary() -> None:
    """Anthropic thinking (with a signature) streams as a reasoning item with one summary part."""
    payloads = _run(
        [
            ResponseStart("msg_1", "claude"),
            ReasoningDelta(index=0, text="Let me "),
            ReasoningDelta(index=0, text="think."),
            ReasoningDelta(index=0, signature="sig"),
            PartEnd(0),
            TextDelta(1, "Done."),
            PartEnd(1),
            Finish(StopReason.END_TURN),
        ]
    )
    assert _kinds(payloads)[2:9] == [
        "output_item.added",
        "reasoning_summary_part.added",
        "reasoning_summary_text.delta",
        "reasoning_summary_text.delta",
        "reasoning_summary_text.done",
        "reasoning_summary_part.done",
        "output_item.done",
    ]
    item = payloads[8]["item"]
    assert item["type"] == "reasoning" and item["summary"] == [{"type": "summary_text", "text": "Let me think."}]
    assert item["id"].startswith("rs_")
    # An invented reasoning id is never replayed to OpenAI.
    req = CanonicalRequest(
        model="m",
        messages=[Message(role="assistant", parts=[ReasoningPart(text="x", id=item["id"]), TextPart(text="Done.")])],
    )
    assert [i.get("type", "message") for i in CODEC.encode_request(req, "gpt-5")["input"]] == ["message"]


def test_max_tokens_ends_with_response_incomplete() -> None:
    payloads = _run([TextDelta(0, "cut"), Finish(StopReason.MAX_TOKENS), UsageUpdate(USAGE)])
    final = payloads[-1]
    assert final["type"] == "response.incomplete"
    assert final["response"]["status"] == "incomplete"
    assert final["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["response"]["output"][-1]["status"] == "incomplete"
    assert final["response"]["usage"]["output_tokens"] == 5


def test_refusal_is_a_message_with_refusal_content() -> None:
    payloads = _run([RefusalDelta(0, "No."), Finish(StopReason.REFUSAL)])
    assert "refusal.delta" in _kinds(payloads) and "refusal.done" in _kinds(payloads)
    assert payloads[-1]["response"]["output"][0]["content"] == [{"type": "refusal", "refusal": "No."}]


def test_upstream_failure_mid_stream_sends_error_then_response_failed() -> None:
    encoder = CODEC.stream_encoder("m", "resp_1", True)
    body = encoder.encode(ResponseStart("x", "m")) + encoder.encode(TextDelta(0, "par"))
    body += encoder.encode(StreamError("upstream went away", "api_error"))
    body += encoder.encode(TextDelta(0, "ignored")) + encoder.close()
    payloads = _frames(body)
    assert _kinds(payloads)[-2:] == ["error", "failed"]
    assert payloads[-2]["code"] == "server_error" and payloads[-2]["message"] == "upstream went away"
    assert payloads[-1]["response"]["status"] == "failed"
    assert payloads[-1]["response"]["error"] == {"code": "server_error", "message": "upstream went away"}


def test_error_from_a_fresh_encoder_is_a_lone_error_event() -> None:
    """The fast path reports a broken relayed stream with a fresh encoder: no second lifecycle."""
    encoder = CODEC.stream_encoder("m", "resp_1", True)
    payloads = _frames(encoder.error("slow down", "rate_limit_exceeded"))
    assert _kinds(payloads) == ["error"]
    assert payloads[0]["code"] == "rate_limit_exceeded" and payloads[0]["message"] == "slow down"
    assert encoder.close() == b""


def test_non_stream_answer_replayed_as_stream_echoes_the_request() -> None:
    request = CanonicalRequest(
        model="openai/gpt-4o",
        system=[TextPart(text="Be brief.")],
        messages=[Message(role="user", parts=[TextPart(text="hi")])],
        tools=[ToolSpec(name="f", parameters={"type": "object", "properties": {}})],
        temperature=0.2,
        max_output_tokens=64,
        source_protocol="anthropic_messages",
    )
    answer = CanonicalResponse(
        id="msg_1",
        model="claude",
        created=5,
        content=[TextPart(text="Sure."), ToolCallPart(id="toolu_1", name="f", arguments="{}")],
        stop_reason=StopReason.TOOL_USE,
        usage=USAGE,
    )
    payloads = _run(events_from_response(answer), request=request)
    final = payloads[-1]["response"]
    assert (final["instructions"], final["temperature"], final["max_output_tokens"]) == ("Be brief.", 0.2, 64)
    assert final["tools"] == [
        {"type": "function", "name": "f", "parameters": {"type": "object", "properties": {}}, "strict": False}
    ]
    assert payloads[0]["response"]["tools"] == final["tools"]
    # The same answer, non-streamed, has the same output facts.
    body = CODEC.encode_response(answer, "openai/gpt-4o", request=request)
    assert_valid(body, "Response")
    assert [i["type"] for i in body["output"]] == [i["type"] for i in final["output"]]
    assert body["output"][1]["call_id"] == final["output"][1]["call_id"] == "toolu_1"
