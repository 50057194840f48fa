"""Wire details of translated answers (issue 8, defects 4 and 7): empty tool arguments, items cut by the
output cap, reasoning token counts the upstream did not give."""

from __future__ import annotations

import json
from typing import Any

from modelport.core import (
    CanonicalResponse,
    Finish,
    PartEnd,
    StopReason,
    StreamEvent,
    TextDelta,
    ToolCallPart,
    Usage,
    UsageUpdate,
    parse_sse,
)
from modelport.protocols import get_codec

MESSAGES = get_codec("anthropic_messages")
RESPONSES = get_codec("openai_responses")
CHAT = get_codec("openai_chat")

# An Anthropic stream of a tool without input: its only argument fragment is "" (see the conformance README).
NO_ARGUMENT_TOOL = [
    (
        "message_start",
        {"type": "message_start", "message": {"id": "msg_1", "model": "c", "usage": {"input_tokens": 9}}},
    ),
    (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "now", "input": {}},
        },
    ),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ""}},
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    (
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}},
    ),
    ("message_stop", {"type": "message_stop"}),
]


def _translate(target: Any, events: list[StreamEvent] | None = None) -> list[dict[str, Any]]:
    if events is None:
        decoder = MESSAGES.stream_decoder()
        events = [e for name, data in NO_ARGUMENT_TOOL for e in decoder.feed(name, json.dumps(data))]
        events += decoder.close()
    encoder = target.stream_encoder("m", "resp_1", True)
    body = b"".join(encoder.encode(e) for e in events) + encoder.close()
    return [json.loads(sse.data) for sse in parse_sse(body) if sse.data != "[DONE]"]


def test_a_tool_call_without_arguments_reaches_chat_clients_as_an_empty_object() -> None:
    chunks = _translate(CHAT)
    arguments = "".join(
        call["function"].get("arguments", "")
        for c in chunks
        for choice in c["choices"]
        for call in choice["delta"].get("tool_calls", [])
    )
    assert arguments == "{}"
    resp = CanonicalResponse(id="x", model="m", created=1, content=[ToolCallPart(id="c1", name="now", arguments="")])
    body = CHAT.encode_response(resp, "m")
    assert body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == "{}"


def test_a_tool_call_without_arguments_reaches_responses_clients_as_an_empty_object() -> None:
    frames = _translate(RESPONSES)
    done = next(f for f in frames if f["type"] == "response.function_call_arguments.done")
    assert done["arguments"] == "{}"
    deltas = "".join(f["delta"] for f in frames if f["type"] == "response.function_call_arguments.delta")
    assert deltas == "{}"
    final = frames[-1]["response"]
    assert final["output"][0]["arguments"] == "{}"
    resp = CanonicalResponse(id="x", model="m", created=1, content=[ToolCallPart(id="c1", name="now", arguments="")])
    assert RESPONSES.encode_response(resp, "m")["output"][0]["arguments"] == "{}"


def test_a_responses_stream_cut_by_the_output_cap_marks_its_item_incomplete() -> None:
    events: list[StreamEvent] = [
        TextDelta(0, "The answer is"),
        PartEnd(0),
        Finish(StopReason.MAX_TOKENS),
        UsageUpdate(Usage(input_tokens=5, output_tokens=16)),
    ]
    frames = _translate(RESPONSES, events)
    item_done = next(f for f in frames if f["type"] == "response.output_item.done")
    assert item_done["item"]["status"] == "incomplete"
    assert frames[-1]["type"] == "response.incomplete"
    assert frames[-1]["response"]["output"][0]["status"] == "incomplete"
    assert frames[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    # A complete answer keeps `completed` items, and the last item is not held back past the finish.
    events[2] = Finish(StopReason.END_TURN)
    frames = _translate(RESPONSES, events)
    assert next(f for f in frames if f["type"] == "response.output_item.done")["item"]["status"] == "completed"
    assert frames[-1]["type"] == "response.completed"


def test_reasoning_tokens_the_upstream_did_not_report_are_not_claimed_to_be_zero() -> None:
    unknown = MESSAGES.usage_from_body({"usage": {"input_tokens": 3, "output_tokens": 4}})
    assert unknown is not None and unknown.reasoning_tokens is None
    resp = CanonicalResponse(id="x", model="m", created=1, usage=unknown)
    usage = CHAT.encode_response(resp, "m")["usage"]
    assert "reasoning_tokens" not in usage["completion_tokens_details"]
    # A count the upstream gave (even 0) is passed on.
    known = CHAT.usage_from_body(
        {"usage": {"prompt_tokens": 1, "completion_tokens": 2, "completion_tokens_details": {"reasoning_tokens": 0}}}
    )
    assert known is not None and known.reasoning_tokens == 0
    resp.usage = known
    assert CHAT.encode_response(resp, "m")["usage"]["completion_tokens_details"]["reasoning_tokens"] == 0
    assert (unknown + known).reasoning_tokens == 0 and (unknown + unknown).reasoning_tokens is None
