"""The facts of one model answer (text, tool calls, stop reason, usage), read from any protocol's wire form.

Written from the public protocol descriptions, independently of the gateway's codecs, so a translated
answer can be compared with the recorded upstream answer it came from. Usage follows DESIGN.md §3:
`input_tokens` counts every input token, cache reads and writes included (OpenAI's `prompt_tokens` /
`input_tokens` already do; Anthropic's `input_tokens` does not). `stop` is protocol-neutral:
``end`` (natural end or stop sequence), ``tool`` (tool calls), ``length`` (token cap), ``filter``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tests.integration.conformance_gateway.sse_wire import WireEvent


@dataclass
class Facts:
    text: str = ""
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)  # (name, parsed arguments)
    stop: str | None = None
    input_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output_tokens: int = 0
    reasoning: str = ""


def _args(raw: str) -> Any:
    return json.loads(raw) if raw.strip() else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


# ---------------------------------------------------------------- Chat Completions

CHAT_STOP = {
    "stop": "end",
    "tool_calls": "tool",
    "function_call": "tool",
    "length": "length",
    "content_filter": "filter",
}


def _chat_usage(facts: Facts, usage: dict[str, Any]) -> None:
    details = usage.get("prompt_tokens_details") or {}
    facts.input_tokens = _int(usage.get("prompt_tokens"))
    facts.cache_read = _int(details.get("cached_tokens"))
    facts.cache_write = _int(details.get("cache_write_tokens"))
    facts.output_tokens = _int(usage.get("completion_tokens"))


def chat_body(body: dict[str, Any]) -> Facts:
    (choice,) = body["choices"]
    message = choice["message"]
    facts = Facts(text=message.get("content") or "", stop=CHAT_STOP[choice["finish_reason"]])
    for call in message.get("tool_calls") or []:
        facts.tool_calls.append((call["function"]["name"], _args(call["function"]["arguments"])))
    _chat_usage(facts, body.get("usage") or {})
    return facts


def chat_stream(events: list[WireEvent]) -> Facts:
    facts = Facts()
    names: dict[int, str] = {}
    args: dict[int, str] = {}
    for event in events:
        chunk = event.payload
        if chunk == "[DONE]":
            continue
        if chunk.get("usage"):
            _chat_usage(facts, chunk["usage"])
        for choice in chunk["choices"]:
            delta = choice.get("delta") or {}
            facts.text += delta.get("content") or ""
            for call in delta.get("tool_calls") or []:
                function = call.get("function") or {}
                if function.get("name"):
                    names[call["index"]] = function["name"]
                args[call["index"]] = args.get(call["index"], "") + (function.get("arguments") or "")
            if choice.get("finish_reason"):
                facts.stop = CHAT_STOP[choice["finish_reason"]]
    facts.tool_calls = [(names[i], _args(args[i])) for i in sorted(args)]
    return facts


# ---------------------------------------------------------------- Responses

RESPONSES_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "filter"}


def responses_body(response: dict[str, Any]) -> Facts:
    facts = Facts()
    for item in response.get("output") or []:
        if item["type"] == "message":
            facts.text += "".join(p.get("text", "") for p in item["content"] if p["type"] == "output_text")
        elif item["type"] == "function_call":
            facts.tool_calls.append((item["name"], _args(item["arguments"])))
        elif item["type"] == "reasoning":
            facts.reasoning += "".join(s.get("text", "") for s in item.get("summary") or [])
    if response["status"] == "incomplete":
        facts.stop = RESPONSES_INCOMPLETE[(response.get("incomplete_details") or {})["reason"]]
    elif response["status"] == "completed":
        facts.stop = "tool" if facts.tool_calls else "end"
    usage = response.get("usage") or {}
    facts.input_tokens = _int(usage.get("input_tokens"))
    facts.cache_read = _int((usage.get("input_tokens_details") or {}).get("cached_tokens"))
    facts.output_tokens = _int(usage.get("output_tokens"))
    return facts


RESPONSES_TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def responses_stream(events: list[WireEvent]) -> Facts:
    """Facts of the terminal event's response, checked against what the deltas streamed."""
    payloads = [e.payload for e in events]
    terminal = [p for p in payloads if p["type"] in RESPONSES_TERMINAL]
    assert len(terminal) == 1 and terminal[0] is payloads[-1], "one terminal event, last"
    facts = responses_body(terminal[0]["response"])
    streamed_text = "".join(p["delta"] for p in payloads if p["type"] == "response.output_text.delta")
    assert streamed_text == facts.text, "output_text deltas differ from the final response"
    streamed_args: dict[str, str] = {}
    for p in payloads:
        if p["type"] == "response.function_call_arguments.delta":
            streamed_args[p["item_id"]] = streamed_args.get(p["item_id"], "") + p["delta"]
    if streamed_args:
        streamed = sorted(json.dumps(_args(a), sort_keys=True) for a in streamed_args.values())
        final = sorted(json.dumps(a, sort_keys=True) for _, a in facts.tool_calls)
        assert streamed == final, "function_call_arguments deltas differ from the final response"
    return facts


# ---------------------------------------------------------------- Messages

MESSAGES_STOP = {
    "end_turn": "end",
    "stop_sequence": "end",
    "tool_use": "tool",
    "max_tokens": "length",
    "refusal": "filter",
}


def _messages_usage(facts: Facts, usage: dict[str, Any]) -> None:
    facts.cache_read = _int(usage.get("cache_read_input_tokens"))
    facts.cache_write = _int(usage.get("cache_creation_input_tokens"))
    facts.input_tokens = _int(usage.get("input_tokens")) + facts.cache_read + facts.cache_write
    facts.output_tokens = _int(usage.get("output_tokens"))


def messages_body(message: dict[str, Any]) -> Facts:
    facts = Facts(stop=MESSAGES_STOP.get(message["stop_reason"], message["stop_reason"]))
    for block in message["content"]:
        if block["type"] == "text":
            facts.text += block["text"]
        elif block["type"] == "tool_use":
            facts.tool_calls.append((block["name"], block["input"]))
        elif block["type"] == "thinking":
            facts.reasoning += block["thinking"]
    _messages_usage(facts, message.get("usage") or {})
    return facts


def messages_stream(events: list[WireEvent]) -> Facts:
    facts = Facts()
    blocks: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] = {}
    for event in events:
        p = event.payload
        kind = p["type"]
        if kind == "message_start":
            usage.update({k: v for k, v in (p["message"].get("usage") or {}).items() if v is not None})
        elif kind == "content_block_start":
            blocks[p["index"]] = {**p["content_block"], "_json": ""}
        elif kind == "content_block_delta":
            block, delta = blocks[p["index"]], p["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "input_json_delta":
                block["_json"] += delta["partial_json"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
        elif kind == "message_delta":
            # Cumulative: present counts replace the earlier ones.
            usage.update({k: v for k, v in (p.get("usage") or {}).items() if v is not None})
            if p["delta"].get("stop_reason"):
                facts.stop = MESSAGES_STOP.get(p["delta"]["stop_reason"], p["delta"]["stop_reason"])
    for index in sorted(blocks):
        block = blocks[index]
        if block["type"] == "text":
            facts.text += block["text"]
        elif block["type"] == "tool_use":
            facts.tool_calls.append((block["name"], _args(block["_json"]) if block["_json"] else block["input"]))
        elif block["type"] == "thinking":
            facts.reasoning += block["thinking"]
    _messages_usage(facts, usage)
    return facts


# ---------------------------------------------------------------- dispatch

BODY = {"openai_chat": chat_body, "openai_responses": responses_body, "anthropic_messages": messages_body}
STREAM = {"openai_chat": chat_stream, "openai_responses": responses_stream, "anthropic_messages": messages_stream}
