"""Chat Completions streams: recorded SSE → canonical events → accumulated answer and re-encoded SSE.

Facts of each recorded stream (text, refusal, tool calls, finish reason, usage) are read here directly
from the raw ``data:`` lines, independently of the codec, then compared with:
- the `StreamAccumulator` fold of the decoded events;
- the stream our encoder writes for those events (each chunk validates against
  ``CreateChatCompletionStreamResponse``; the delta sequence matches the recording's except for
  ``obfuscation``, ``service_tier``/``system_fingerprint`` and chunk splitting, which are not ours to copy).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from modelport.core import (
    Finish,
    RefusalDelta,
    ResponseStart,
    StopReason,
    StreamAccumulator,
    StreamEvent,
    ToolCallPart,
    events_from_response,
    parse_sse,
)
from modelport.protocols.openai_chat import CODEC, decode_response
from modelport.protocols.openai_chat.finish import finish_reason_to_wire
from modelport.protocols.openai_chat.usage import usage_from_wire
from tests.support.cassettes import Interaction, interactions, sse_file
from tests.support.openapi_schema import assert_valid

STREAMS = [it for it in interactions("openai_chat", path="/v1/chat/completions") if it.status == 200 and it.is_sse]


def test_recordings_cover_streams() -> None:
    assert len(STREAMS) >= 6


def _raw_chunks(body: str) -> list[dict[str, Any]]:
    """JSON chunks of a Chat SSE body, read without the codec's parser."""
    chunks = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(line[5:].lstrip() for line in block.split("\n") if line.startswith("data:"))
        if data and data != "[DONE]":
            chunks.append(json.loads(data))
    return chunks


def _facts_from_chunks(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    text, refusal, finish, usage = "", "", None, None
    calls: dict[int, list[str]] = {}
    for chunk in chunks:
        if chunk.get("usage"):
            usage = usage_from_wire(chunk["usage"], chunk.get("service_tier"))  # the tier beside usage
        for choice in chunk["choices"]:
            delta = choice["delta"]
            text += delta.get("content") or ""
            refusal += delta.get("refusal") or ""
            for call in delta.get("tool_calls") or []:
                entry = calls.setdefault(call["index"], ["", "", ""])
                entry[0] += call.get("id") or ""
                entry[1] += call.get("function", {}).get("name") or ""
                entry[2] += call.get("function", {}).get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    return {
        "text": text,
        "refusal": refusal or None,
        "tool_calls": [tuple(calls[i]) for i in sorted(calls)],
        "finish_reason": finish,
        "usage": usage,
    }


def _decode(body: str) -> list[StreamEvent]:
    decoder = CODEC.stream_decoder()
    events: list[StreamEvent] = []
    for sse in parse_sse(body.encode()):
        events.extend(decoder.feed(sse.event, sse.data))
    return events + decoder.close()


def _accumulate(events: list[StreamEvent]) -> dict[str, Any]:
    acc = StreamAccumulator()
    acc.feed_all(events)
    resp = acc.response()
    return {
        "text": resp.text,
        "refusal": resp.refusal,
        "tool_calls": [(c.id, c.name, c.arguments) for c in resp.tool_calls],
        "finish_reason": finish_reason_to_wire(resp.stop_reason),
        "usage": resp.usage,
    }


@pytest.mark.parametrize("it", STREAMS, ids=lambda it: it.id)
def test_decoded_stream_accumulates_to_the_recorded_facts(it: Interaction) -> None:
    facts = _facts_from_chunks(_raw_chunks(it.sse_body))
    assert facts["finish_reason"] is not None and facts["usage"] is not None  # the data shows both
    assert _accumulate(_decode(it.sse_body)) == facts


def _without_tier(facts: dict[str, Any]) -> dict[str, Any]:
    usage = facts["usage"]
    return {**facts, "usage": None if usage is None else dataclasses.replace(usage, service_tier=None)}


@pytest.mark.parametrize("it", STREAMS, ids=lambda it: it.id)
def test_usage_sniffer_sees_the_final_usage(it: Interaction) -> None:
    sniffer = CODEC.usage_sniffer()
    for sse in parse_sse(it.sse_body):
        sniffer.feed(sse.event, sse.data)
    assert sniffer.usage == _facts_from_chunks(_raw_chunks(it.sse_body))["usage"]
    assert sniffer.usage is not None and sniffer.usage.input_tokens > 0


def _encode(events: list[StreamEvent], include_usage: bool, model: str = "openai/gpt-4o") -> bytes:
    encoder = CODEC.stream_encoder(model, "chatcmpl-ours", include_usage)
    return b"".join(encoder.encode(e) for e in events) + encoder.close()


def _shapes(chunks: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What the chunks say, without what differs between servers or runs. Recordings differ in whether
    the role chunk is separate from the first tool-call delta (gpt-4o 2025) or merged (2026), so the
    role announcement (``role``, ``content: null``, ``refusal: null``) is compared separately."""
    out = []
    for chunk in chunks:
        choices = []
        for c in chunk["choices"]:
            delta = {
                k: v for k, v in c["delta"].items() if k != "role" and not (k in ("content", "refusal") and v is None)
            }
            if delta or c["finish_reason"] is not None:
                choices.append((c["index"], delta, c["finish_reason"]))
        if choices or chunk.get("usage") is not None:
            out.append((choices, chunk.get("usage") is not None))
    return out


@pytest.mark.parametrize("it", STREAMS, ids=lambda it: it.id)
def test_reencoded_stream_is_valid_and_matches_the_recording(it: Interaction) -> None:
    events = _decode(it.sse_body)
    body = _encode(events, include_usage=True).decode()
    assert body.endswith("data: [DONE]\n\n")
    ours = _raw_chunks(body)
    for chunk in ours:
        assert_valid(chunk, "CreateChatCompletionStreamResponse")
        assert chunk["id"] == "chatcmpl-ours" and chunk["model"] == "openai/gpt-4o"
        assert "usage" in chunk  # include_usage: null on every chunk but the last
    recorded = [c for c in _raw_chunks(it.sse_body) if c["choices"] or c.get("usage")]
    assert ours[0]["choices"][0]["delta"]["role"] == "assistant"
    assert _shapes(ours) == _shapes(recorded)
    # The upstream's `service_tier` is read for billing; a re-encoded stream does not repeat it.
    assert _facts_from_chunks(ours) == _without_tier(_facts_from_chunks(recorded))


@pytest.mark.parametrize("it", STREAMS, ids=lambda it: it.id)
def test_without_include_usage_there_is_no_usage_chunk(it: Interaction) -> None:
    body = _encode(_decode(it.sse_body), include_usage=False).decode()
    chunks = _raw_chunks(body)
    assert all("usage" not in c and c["choices"] for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == _facts_from_chunks(chunks)["finish_reason"]


def test_extracted_sse_files_decode_like_the_cassettes() -> None:
    text = _accumulate(_decode(sse_file("extracted", "chat_completions.stream_text_include_usage.sse")))
    assert text["text"] == "The capital of Mexico is Mexico City." and text["finish_reason"] == "stop"
    tools = _accumulate(_decode(sse_file("extracted", "chat_completions.stream_parallel_tool_calls_include_usage.sse")))
    assert tools["finish_reason"] == "tool_calls"
    assert [name for _, name, _ in tools["tool_calls"]] == ["get_country", "get_product_name"]


def test_parallel_tool_calls_interleave_into_separate_parts() -> None:
    events = _decode(sse_file("extracted", "chat_completions.stream_parallel_tool_calls_include_usage.sse"))
    acc = StreamAccumulator()
    acc.feed_all(events)
    resp = acc.response()
    assert resp.stop_reason is StopReason.TOOL_USE
    assert all(isinstance(p, ToolCallPart) for p in resp.content) and len(resp.content) == 2
    for call in resp.tool_calls:
        json.loads(call.arguments)  # each call's fragments reassemble into valid JSON


@pytest.mark.parametrize(
    "it",
    [it for it in interactions("openai_chat") if it.status == 200 and not it.is_sse and it.method == "POST"],
    ids=lambda it: it.id,
)
def test_non_stream_answer_streams_as_the_same_facts(it: Interaction) -> None:
    """Non-stream upstream → stream client: the stream says what the JSON said."""
    resp = decode_response(it.response_json)
    body = _encode(events_from_response(resp), include_usage=True).decode()
    chunks = _raw_chunks(body)
    for chunk in chunks:
        assert_valid(chunk, "CreateChatCompletionStreamResponse")
    facts = _facts_from_chunks(chunks)
    message = it.response_json["choices"][0]["message"]
    assert facts["text"] == (message["content"] or "")
    assert facts["finish_reason"] == it.response_json["choices"][0]["finish_reason"]
    assert facts["tool_calls"] == [
        (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []
    ]
    # The tier the upstream reported is billing's (read from the completion's top level); the stream
    # built from it carries the counts, not the tier.
    assert resp.usage is not None
    assert facts["usage"] == dataclasses.replace(resp.usage, service_tier=None)


def test_refusal_stream_starts_with_null_content() -> None:
    body = _encode([ResponseStart("x", "m", 5), RefusalDelta(0, "No."), Finish(StopReason.REFUSAL)], False)
    chunks = _raw_chunks(body.decode())
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": None, "refusal": ""}
    assert chunks[1]["choices"][0]["delta"] == {"refusal": "No."}
    assert chunks[2]["choices"][0] == {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}
    decoded = _accumulate(_decode(body.decode()))
    assert decoded["refusal"] == "No." and decoded["text"] == ""


def test_in_stream_error_frame() -> None:
    encoder = CODEC.stream_encoder("m", "id", True)
    frame = encoder.error("upstream went away", "api_error")
    [chunk] = _raw_chunks(frame.decode())
    assert chunk == {"error": {"message": "upstream went away", "type": "api_error", "param": None, "code": None}}
    decoder = CODEC.stream_decoder()
    [event] = decoder.feed(None, json.dumps(chunk))
    assert type(event).__name__ == "StreamError"
