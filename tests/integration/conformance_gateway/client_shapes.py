"""Client-side checks of translated answers: request builders per protocol and shape validation.

Chat and Responses outputs are validated against the OpenAI OpenAPI component schemas (each Responses
stream event against its own member schema of `ResponseStreamEvent`); Messages outputs are parsed with
the `anthropic` SDK's own types.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import anthropic
import pydantic

from tests.integration.conformance_gateway.sse_wire import WireEvent
from tests.support.openapi_schema import assert_valid, load_spec

# ---------------------------------------------------------------- what the recorded request asked


def first_user_text(folder: str, request: dict[str, Any]) -> str:
    """The text of the first user turn of a recorded request, in any of the three protocols."""
    turns = request.get("messages") or request.get("input")
    if isinstance(turns, str):
        return turns
    for turn in turns or []:
        if turn.get("role") != "user":
            continue
        content = turn["content"]
        if isinstance(content, str):
            return content
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    raise AssertionError(f"no user turn in the recorded {folder} request")


def function_tools(folder: str, request: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, description, JSON schema) of the recorded request's own function tools (server tools skipped)."""
    out = []
    for tool in request.get("tools") or []:
        if folder == "openai_chat" and tool.get("type") == "function":
            fn = tool["function"]
            out.append((fn["name"], fn.get("description", ""), fn["parameters"]))
        elif folder == "openai_responses" and tool.get("type") == "function":
            out.append((tool["name"], tool.get("description") or "", tool["parameters"]))
        elif folder == "anthropic_messages" and "input_schema" in tool:
            out.append((tool["name"], tool.get("description", ""), tool["input_schema"]))
    return out


def client_request(
    client: str, model: str, prompt: str, tools: list[tuple[str, str, dict[str, Any]]], *, stream: bool
) -> dict[str, Any]:
    """A plain request of the client protocol: one user turn, the tools, streaming as asked."""
    body: dict[str, Any] = {"model": model}
    if client == "openai_chat":
        body["messages"] = [{"role": "user", "content": prompt}]
        if tools:
            body["tools"] = [
                {"type": "function", "function": {"name": n, "description": d, "parameters": p}} for n, d, p in tools
            ]
        if stream:
            body["stream_options"] = {"include_usage": True}
    elif client == "openai_responses":
        body["input"] = prompt
        if tools:
            body["tools"] = [{"type": "function", "name": n, "description": d, "parameters": p} for n, d, p in tools]
    else:
        body["max_tokens"] = 4096
        body["messages"] = [{"role": "user", "content": prompt}]
        if tools:
            body["tools"] = [{"name": n, "description": d, "input_schema": p} for n, d, p in tools]
    if stream:
        body["stream"] = True
    return body


# ---------------------------------------------------------------- OpenAI shapes


@cache
def _responses_event_schemas() -> dict[str, str]:
    """`type` value → component schema name, for every member of `ResponseStreamEvent`."""
    schemas = load_spec()["components"]["schemas"]
    out: dict[str, str] = {}
    for ref in schemas["ResponseStreamEvent"]["anyOf"]:
        name = ref["$ref"].rsplit("/", 1)[1]
        type_schema = schemas[name].get("properties", {}).get("type", {})
        for value in type_schema.get("enum", []) or ([type_schema["const"]] if "const" in type_schema else []):
            out[value] = name
    return out


def check_chat_body(body: dict[str, Any]) -> None:
    assert_valid(body, "CreateChatCompletionResponse")


def check_chat_stream(events: list[WireEvent], *, include_usage: bool) -> None:
    assert events and events[-1].data == "[DONE]", "a Chat stream ends with data: [DONE]"
    chunks = [e.payload for e in events[:-1]]
    assert all(e.event is None for e in events), "Chat streams carry no event names"
    for chunk in chunks:
        assert_valid(chunk, "CreateChatCompletionStreamResponse")
    assert len({c["id"] for c in chunks}) == 1, "every chunk of one completion has the same id"
    usage_chunks = [i for i, c in enumerate(chunks) if c["choices"] == [] and c.get("usage")]
    if include_usage:
        assert usage_chunks == [len(chunks) - 1], "one usage chunk (choices: []), right before [DONE]"
    else:
        assert usage_chunks == []
    finishes = [ch["finish_reason"] for c in chunks for ch in c["choices"] if ch.get("finish_reason")]
    assert len(finishes) == 1, f"exactly one finish_reason, got {finishes}"


def check_responses_body(body: dict[str, Any]) -> None:
    assert_valid(body, "Response")


def check_responses_stream(events: list[WireEvent]) -> None:
    payloads = [e.payload for e in events]
    members = _responses_event_schemas()
    for event, payload in zip(events, payloads, strict=True):
        assert event.event == payload["type"], f"event name {event.event!r} vs type {payload['type']!r}"
        assert payload["type"] in members, f"{payload['type']} is not a ResponseStreamEvent member"
        assert_valid(payload, members[payload["type"]])
    assert payloads[0]["type"] == "response.created"
    assert payloads[-1]["type"] in ("response.completed", "response.incomplete", "response.failed")
    numbers = [p["sequence_number"] for p in payloads]
    assert numbers == sorted(set(numbers)), f"sequence_number not increasing: {numbers}"
    assert_valid(payloads[-1]["response"], "Response")


# ---------------------------------------------------------------- Anthropic shapes (SDK types)

_EVENT_ADAPTER: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(anthropic.types.RawMessageStreamEvent)


def check_messages_body(body: dict[str, Any]) -> None:
    message = anthropic.types.Message.model_validate(body)
    assert message.type == "message" and message.role == "assistant"


def check_messages_stream(events: list[WireEvent]) -> None:
    payloads = [e.payload for e in events]
    for event, payload in zip(events, payloads, strict=True):
        assert event.event == payload["type"], f"event name {event.event!r} vs type {payload['type']!r}"
        if payload["type"] == "ping":  # real streams carry pings; the SDK's union has no type for them
            assert payload == {"type": "ping"}
            continue
        _EVENT_ADAPTER.validate_python(payload)
    kinds = [p["type"] for p in payloads]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop", kinds
    assert kinds.count("message_delta") == 1, kinds
    starts = [p["index"] for p in payloads if p["type"] == "content_block_start"]
    stops = [p["index"] for p in payloads if p["type"] == "content_block_stop"]
    assert starts == stops == list(range(len(starts))), f"blocks {starts} opened, {stops} closed"


def check_body(client: str, body: dict[str, Any]) -> None:
    {"openai_chat": check_chat_body, "openai_responses": check_responses_body}.get(client, check_messages_body)(body)


def check_stream(client: str, events: list[WireEvent]) -> None:
    if client == "openai_chat":
        check_chat_stream(events, include_usage=True)
    elif client == "openai_responses":
        check_responses_stream(events)
    else:
        check_messages_stream(events)
