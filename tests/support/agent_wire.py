"""One agent turn (thinking, text, one tool call) rendered in each vendor's wire shape, whole or streamed.

Thinking is rendered as each vendor does: an Anthropic `thinking` block with a `signature`, an OpenAI
Responses `reasoning` item with a summary and (when the client asked for it) `encrypted_content`, and for
Chat Completions only a reasoning token count in the usage (that API returns no reasoning text).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from tests.support.fake_shapes import sse_data, sse_event


@dataclass(frozen=True)
class Call:
    call_id: str
    name: str
    arguments: dict[str, Any]

    @property
    def arguments_json(self) -> str:
        return json.dumps(self.arguments)


@dataclass(frozen=True)
class Turn:
    """What the fake model answers: optional thinking (with its opaque token), text, at most one call."""

    model: str
    rid: str
    text: str = ""
    call: Call | None = None
    thinking: str | None = None
    thinking_token: str | None = None  # Anthropic signature / Responses encrypted_content
    input_tokens: int = 10
    output_tokens: int = 20


def _pieces(text: str, size: int = 12) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# ---------------------------------------------------------------- Anthropic Messages


def _anthropic_blocks(t: Turn) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if t.thinking is not None:
        blocks.append({"type": "thinking", "thinking": t.thinking, "signature": t.thinking_token})
    if t.text:
        blocks.append({"type": "text", "text": t.text})
    if t.call is not None:
        blocks.append({"type": "tool_use", "id": t.call.call_id, "name": t.call.name, "input": t.call.arguments})
    return blocks


def _anthropic_usage(t: Turn, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": t.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
    }


def anthropic_body(t: Turn) -> dict[str, Any]:
    return {
        "id": f"msg_{t.rid}",
        "type": "message",
        "role": "assistant",
        "model": t.model,
        "content": _anthropic_blocks(t),
        "stop_reason": "tool_use" if t.call else "end_turn",
        "stop_sequence": None,
        "usage": _anthropic_usage(t, t.output_tokens),
    }


def anthropic_events(t: Turn) -> list[bytes]:
    def ev(name: str, **fields: Any) -> bytes:
        return sse_event(name, {"type": name, **fields})

    start = {**anthropic_body(t), "content": [], "stop_reason": None, "usage": _anthropic_usage(t, 1)}
    out = [ev("message_start", message=start), ev("ping")]
    for index, block in enumerate(_anthropic_blocks(t)):
        kind = block["type"]
        if kind == "thinking":
            opening: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            opening = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
        else:
            opening = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(json.dumps(block["input"]))]
        out.append(ev("content_block_start", index=index, content_block=opening))
        out += [ev("content_block_delta", index=index, delta=d) for d in deltas]
        out.append(ev("content_block_stop", index=index))
    stop = {"stop_reason": "tool_use" if t.call else "end_turn", "stop_sequence": None}
    out.append(ev("message_delta", delta=stop, usage=_anthropic_usage(t, t.output_tokens)))
    out.append(ev("message_stop"))
    return out


# ---------------------------------------------------------------- OpenAI Chat Completions


def _chat_usage(t: Turn) -> dict[str, Any]:
    return {
        "prompt_tokens": t.input_tokens,
        "completion_tokens": t.output_tokens,
        "total_tokens": t.input_tokens + t.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 7 if t.thinking is not None else 0, "audio_tokens": 0},
    }


def chat_body(t: Turn) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": t.text or None, "refusal": None}
    if t.call is not None:
        function = {"name": t.call.name, "arguments": t.call.arguments_json}
        message["tool_calls"] = [{"id": t.call.call_id, "type": "function", "function": function}]
    return {
        "id": f"chatcmpl-{t.rid}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": t.model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls" if t.call else "stop"}
        ],
        "usage": _chat_usage(t),
    }


def chat_events(t: Turn, include_usage: bool) -> list[bytes]:
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {
            "id": f"chatcmpl-{t.rid}",
            "object": "chat.completion.chunk",
            "created": created,
            "model": t.model,
            "choices": [choice],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": p}) for p in _pieces(t.text)] if t.text else []
    if t.call is not None:
        head = {"index": 0, "id": t.call.call_id, "type": "function"}
        chunks.append(chunk({"tool_calls": [{**head, "function": {"name": t.call.name, "arguments": ""}}]}))
        for p in _pieces(t.call.arguments_json):
            chunks.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}))
    chunks.append(chunk({}, "tool_calls" if t.call else "stop"))
    if include_usage:
        chunks.append({**chunk({}), "choices": [], "usage": _chat_usage(t)})
    return [sse_data(c) for c in chunks] + [b"data: [DONE]\n\n"]


# ---------------------------------------------------------------- OpenAI Responses


def _responses_items(t: Turn) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if t.thinking is not None:
        reasoning: dict[str, Any] = {
            "id": f"rs_{t.call.call_id if t.call else t.rid}",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": t.thinking}],
        }
        if t.thinking_token is not None:
            reasoning["encrypted_content"] = t.thinking_token
        items.append(reasoning)
    if t.text:
        content = [{"type": "output_text", "text": t.text, "annotations": [], "logprobs": []}]
        items.append(
            {"id": f"msg_{t.rid}", "type": "message", "status": "completed", "role": "assistant", "content": content}
        )
    if t.call is not None:
        items.append(
            {
                "id": f"fc_{t.call.call_id}",
                "type": "function_call",
                "status": "completed",
                "arguments": t.call.arguments_json,
                "call_id": t.call.call_id,
                "name": t.call.name,
            }
        )
    return items


def responses_body(t: Turn, *, final: bool = True) -> dict[str, Any]:
    return {
        "id": f"resp_{t.rid}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed" if final else "in_progress",
        "error": None,
        "incomplete_details": None,
        "model": t.model,
        "output": _responses_items(t) if final else [],
        "parallel_tool_calls": True,
        "usage": {
            "input_tokens": t.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": t.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 7 if t.thinking is not None else 0},
            "total_tokens": t.input_tokens + t.output_tokens,
        }
        if final
        else None,
    }


def responses_events(t: Turn) -> list[bytes]:
    events: list[dict[str, Any]] = []

    def add(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    add("response.created", response=responses_body(t, final=False))
    add("response.in_progress", response=responses_body(t, final=False))
    for index, item in enumerate(_responses_items(t)):
        at = {"item_id": item["id"], "output_index": index}
        if item["type"] == "reasoning":
            add("response.output_item.added", output_index=index, item={**item, "summary": []})
            text = item["summary"][0]["text"]
            summary_part: dict[str, Any] = {"type": "summary_text", "text": ""}
            add("response.reasoning_summary_part.added", **at, summary_index=0, part=summary_part)
            for p in _pieces(text):
                add("response.reasoning_summary_text.delta", **at, summary_index=0, delta=p)
            add("response.reasoning_summary_text.done", **at, summary_index=0, text=text)
            add("response.reasoning_summary_part.done", **at, summary_index=0, part={**summary_part, "text": text})
        elif item["type"] == "message":
            add("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "content": []})
            part: dict[str, Any] = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            add("response.content_part.added", **at, content_index=0, part=part)
            for p in _pieces(t.text):
                add("response.output_text.delta", **at, content_index=0, delta=p, logprobs=[])
            add("response.output_text.done", **at, content_index=0, text=t.text, logprobs=[])
            add("response.content_part.done", **at, content_index=0, part={**part, "text": t.text})
        else:
            add(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            for p in _pieces(item["arguments"]):
                add("response.function_call_arguments.delta", **at, delta=p)
            add("response.function_call_arguments.done", **at, arguments=item["arguments"])
        add("response.output_item.done", output_index=index, item=item)
    add("response.completed", response=responses_body(t))
    return [sse_event(e["type"], e) for e in events]
