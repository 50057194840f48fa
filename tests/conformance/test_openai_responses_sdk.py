"""Our Responses output read by the official openai SDK: its pydantic types parse every event and body,
and its stream accumulator (`ResponseStreamState`, which checks item identities across ``added``,
``done`` and ``response.completed``) builds the same final answer as the terminal event."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai import omit
from openai.lib.streaming.responses._responses import ResponseStreamState
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from modelport.core import (
    CanonicalResponse,
    Finish,
    OpaquePart,
    PartEnd,
    ReasoningDelta,
    ResponseStart,
    StopReason,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallStart,
    Usage,
    UsageUpdate,
    parse_sse,
)
from modelport.protocols.openai_responses import CODEC
from tests.support.cassettes import Interaction, interactions

ALL = interactions("openai_responses", path="/v1/responses")
STREAMS = [it for it in ALL if it.status == 200 and it.is_sse]
BODIES = [it for it in ALL if it.status == 200 and isinstance(it.response_json, dict)]
EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)


def _decode(body: str) -> list[StreamEvent]:
    decoder = CODEC.stream_decoder()
    events: list[StreamEvent] = []
    for sse in parse_sse(body.encode()):
        events.extend(decoder.feed(sse.event, sse.data))
    return events + decoder.close()


def _sdk_final(events: list[StreamEvent]) -> Response:
    """Run our encoded stream through the SDK's parser and accumulator; the accumulated final answer."""
    encoder = CODEC.stream_encoder("openai/gpt-5", "resp_sdk", True)
    body = b"".join(encoder.encode(e) for e in events) + encoder.close()
    state: ResponseStreamState[Any] = ResponseStreamState(input_tools=[], text_format=omit)
    for sse in parse_sse(body):
        state.handle_event(EVENTS.validate_python(json.loads(sse.data)))
    final = state._completed_response
    assert final is not None, "no response.completed accepted by the SDK"
    return final


def _calls(response: Response) -> list[tuple[str, str, str]]:
    return [(i.call_id, i.name, i.arguments) for i in response.output if i.type == "function_call"]


def _raw_facts(body: dict[str, Any]) -> tuple[str, list[tuple[str, str, str]]]:
    """Output text and calls of a recorded body, read from the JSON (older recordings do not satisfy the
    current SDK's stricter types, e.g. no ``cache_write_tokens``)."""
    text = "".join(
        c["text"] for i in body["output"] if i["type"] == "message" for c in i["content"] if c["type"] == "output_text"
    )
    calls = [(i["call_id"], i["name"], i["arguments"]) for i in body["output"] if i["type"] == "function_call"]
    return text, calls


@pytest.mark.parametrize("it", STREAMS, ids=lambda it: it.id)
def test_sdk_accumulates_our_reencoded_recording(it: Interaction) -> None:
    final_raw = next(
        json.loads(sse.data)["response"]
        for sse in parse_sse(it.sse_body.encode())
        if json.loads(sse.data)["type"] == "response.completed"
    )
    ours = _sdk_final(_decode(it.sse_body))
    assert (ours.output_text, _calls(ours)) == _raw_facts(final_raw)
    assert ours.usage is not None
    assert ours.usage.input_tokens == final_raw["usage"]["input_tokens"]
    assert ours.usage.output_tokens == final_raw["usage"]["output_tokens"]


def test_sdk_accumulates_interleaved_parallel_calls_from_a_chat_upstream() -> None:
    events: list[StreamEvent] = [
        ResponseStart("chatcmpl-1", "gpt-4o"),
        ReasoningDelta(index=0, text="plan"),
        TextDelta(1, "Checking both."),
        ToolCallStart(2, "call_a", "f"),
        ToolCallDelta(2, '{"x"'),
        ToolCallStart(3, "call_b", "g"),
        ToolCallDelta(3, '{"y":2}'),
        ToolCallDelta(2, ":1}"),
        PartEnd(0),
        PartEnd(1),
        PartEnd(2),
        PartEnd(3),
        Finish(StopReason.TOOL_USE),
        UsageUpdate(Usage(input_tokens=3, output_tokens=4)),
    ]
    final = _sdk_final(events)
    assert final.output_text == "Checking both."
    assert _calls(final) == [("call_a", "f", '{"x":1}'), ("call_b", "g", '{"y":2}')]
    assert [i.type for i in final.output] == ["reasoning", "message", "function_call", "function_call"]


@pytest.mark.parametrize("it", BODIES, ids=lambda it: it.id)
def test_sdk_parses_our_response_bodies(it: Interaction) -> None:
    decoded = CODEC.decode_response(it.response_json)
    hosted = any(p.data.get("type") == "web_search_call" for p in decoded.content if isinstance(p, OpaquePart))
    foreign = CanonicalResponse(
        id="msg_1",
        model="claude",
        created=1,
        content=[p for p in decoded.content if not isinstance(p, OpaquePart)],
        stop_reason=decoded.stop_reason,
        usage=decoded.usage,
        source_protocol="anthropic_messages",
    )
    bodies = [CODEC.encode_response(foreign, "anthropic/claude")]
    if not hosted:  # the recorded web_search_call item is older than the SDK's types
        bodies.append(CODEC.encode_response(decoded, "openai/gpt-4o"))
    for body in bodies:
        ours = Response.model_validate(body)
        assert (ours.output_text, _calls(ours)) == _raw_facts(it.response_json)
        assert ours.status == "completed"
