"""Wire shapes of the three text protocols, as the fake upstream answers them.

Each protocol gets a non-streaming body builder, a stream event builder and an error body builder,
following the shapes seen in the recorded real traffic (../shared/conformance). The scripted
`Answer` is protocol-neutral; the functions here render it for one protocol.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal

Protocol = Literal["chat", "responses", "messages"]
Finish = Literal["stop", "length"]

PROTOCOL_BY_PATH: dict[str, Protocol] = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
    "/v1/messages": "messages",
}


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    call_id: str = ""

    def arguments_json(self) -> str:
        return json.dumps(self.arguments, separators=(",", ":"))


@dataclass(frozen=True)
class Usage:
    """OpenAI-style totals: `input_tokens` includes cache reads and writes (Anthropic's excludes them).

    `cache_write_1h_tokens` (the 1-hour share of the writes): None sends no ``cache_creation`` breakdown (the
    older Anthropic shape); a number sends it, as current recordings do. `service_tier`: None sends the
    shapes' old default (Chat bodies ``"default"``, nothing elsewhere); a string sends that tier where each
    protocol reports it (Chat: top level of the body and every chunk; Responses: top level of the response;
    Messages: ``usage.service_tier``, with ``inference_geo`` as recorded)."""

    input_tokens: int = 10
    output_tokens: int = 5
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int | None = None
    service_tier: str | None = None


@dataclass(frozen=True)
class Answer:
    """A protocol-neutral model answer: text and/or tool calls, why it ended, and its usage."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish: Finish = "stop"
    usage: Usage = field(default_factory=Usage)
    logprobs: bool = False  # send token log probabilities (one entry per text piece), as asked by logprobs

    def logprob_entries(self) -> list[dict[str, Any]]:
        """One entry per text piece: {token, logprob, bytes, top_logprobs}, the same in Chat and Responses."""
        if not self.logprobs:
            return []
        return [logprob_entry(piece, i) for i, piece in enumerate(self.text_pieces())]

    def text_pieces(self) -> list[str]:
        """The text split into word-sized deltas (a leading space stays with its word, like real tokens)."""
        if not self.text:
            return []
        words = self.text.split(" ")
        return [words[0]] + [" " + w for w in words[1:]]


def logprob_entry(piece: str, i: int) -> dict[str, Any]:
    top = {"token": piece, "logprob": -0.25 - i / 100, "bytes": list(piece.encode())}
    return {**top, "top_logprobs": [top, {"token": "x", "logprob": -3.5, "bytes": [120]}]}


def _call_id(call: ToolCall, index: int, prefix: str) -> str:
    return call.call_id or f"{prefix}fake{index:04d}"


def _arg_pieces(call: ToolCall) -> list[str]:
    """Argument JSON cut into a few fragments, as real streams deliver it."""
    raw = call.arguments_json()
    step = max(1, len(raw) // 3)
    return [raw[i : i + step] for i in range(0, len(raw), step)]


# ---------------------------------------------------------------- Chat Completions


def chat_usage(u: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.input_tokens + u.output_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens, "audio_tokens": 0}
        | ({"cache_write_tokens": u.cache_write_tokens} if u.cache_write_tokens else {}),
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _chat_finish(a: Answer) -> str:
    return "tool_calls" if a.tool_calls else a.finish


def chat_body(a: Answer, model: str, rid: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": a.text or None, "refusal": None}
    if a.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id(c, i, "call_"),
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_json()},
            }
            for i, c in enumerate(a.tool_calls)
        ]
    return {
        "id": f"chatcmpl-{rid}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": {"content": a.logprob_entries(), "refusal": None} if a.logprobs else None,
                "finish_reason": _chat_finish(a),
            }
        ],
        "usage": chat_usage(a.usage),
        "service_tier": a.usage.service_tier or "default",
        "system_fingerprint": "fp_fake",
    }


def chat_events(a: Answer, model: str, rid: str, include_usage: bool) -> list[bytes]:
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, logprobs: Any = None) -> dict[str, Any]:
        c: dict[str, Any] = {
            "id": f"chatcmpl-{rid}",
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}],
        }
        if a.usage.service_tier is not None:
            c["service_tier"] = a.usage.service_tier
        if include_usage:
            c["usage"] = None
        return c

    chunks = [chunk({"role": "assistant", "content": "" if a.text else None, "refusal": None})]
    entries = a.logprob_entries()
    chunks += [
        chunk({"content": piece}, logprobs={"content": [entries[i]], "refusal": None} if entries else None)
        for i, piece in enumerate(a.text_pieces())
    ]
    for i, call in enumerate(a.tool_calls):
        first = {"index": i, "id": _call_id(call, i, "call_"), "type": "function"}
        first["function"] = {"name": call.name, "arguments": ""}
        chunks.append(chunk({"tool_calls": [first]}))
        for frag in _arg_pieces(call):
            chunks.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": frag}}]}))
    chunks.append(chunk({}, _chat_finish(a)))
    if include_usage:
        last = chunk({})
        last["choices"] = []
        last["usage"] = chat_usage(a.usage)
        chunks.append(last)
    return [sse_data(c) for c in chunks] + [b"data: [DONE]\n\n"]


def openai_error(status: int, message: str, error_type: str | None, code: str | None) -> dict[str, Any]:
    default_type = {
        401: "invalid_request_error",
        403: "permission_error",
        404: "invalid_request_error",
        429: "requests",
    }.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": error_type or default_type, "param": None, "code": code}}


# ---------------------------------------------------------------- Responses


def responses_usage(u: Usage) -> dict[str, Any]:
    return {
        "input_tokens": u.input_tokens,
        "input_tokens_details": {"cached_tokens": u.cache_read_tokens}
        | ({"cache_write_tokens": u.cache_write_tokens} if u.cache_write_tokens else {}),
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.input_tokens + u.output_tokens,
    }


def _responses_items(a: Answer, rid: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if a.text:
        items.append(
            {
                "id": f"msg_{rid}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": a.text, "annotations": [], "logprobs": a.logprob_entries()}
                ],
            }
        )
    for i, c in enumerate(a.tool_calls):
        items.append(
            {
                "id": f"fc_{rid}_{i}",
                "type": "function_call",
                "status": "completed",
                "arguments": c.arguments_json(),
                "call_id": _call_id(c, i, "call_"),
                "name": c.name,
            }
        )
    return items


def responses_body(
    a: Answer, model: str, rid: str, *, output: list[dict[str, Any]] | None = None, final: bool = True
) -> dict[str, Any]:
    incomplete = a.finish == "length" and not a.tool_calls
    status = ("incomplete" if incomplete else "completed") if final else "in_progress"
    return {
        "id": f"resp_{rid}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if final and incomplete else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": _responses_items(a, rid) if output is None else output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": True,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        **({"service_tier": a.usage.service_tier} if a.usage.service_tier is not None else {}),
        "usage": responses_usage(a.usage) if final else None,
        "user": None,
        "metadata": {},
    }


def responses_events(a: Answer, model: str, rid: str) -> list[bytes]:
    events: list[dict[str, Any]] = []

    def add(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    add("response.created", response=responses_body(a, model, rid, output=[], final=False))
    add("response.in_progress", response=responses_body(a, model, rid, output=[], final=False))
    for index, item in enumerate(_responses_items(a, rid)):
        if item["type"] == "message":
            _responses_message_events(add, item, index, a)
        else:
            _responses_call_events(add, item, index)
    done = "response.incomplete" if a.finish == "length" and not a.tool_calls else "response.completed"
    add(done, response=responses_body(a, model, rid))
    return [sse_event(e["type"], e) for e in events]


def _responses_message_events(add: Any, item: dict[str, Any], index: int, a: Answer) -> None:
    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    where = {"item_id": item["id"], "output_index": index, "content_index": 0}
    add(
        "response.output_item.added",
        output_index=index,
        item={**item, "status": "in_progress", "content": []},
    )
    add("response.content_part.added", **where, part=part)
    entries = a.logprob_entries()
    for i, piece in enumerate(a.text_pieces()):
        add("response.output_text.delta", **where, delta=piece, logprobs=entries[i : i + 1])
    add("response.output_text.done", **where, text=a.text, logprobs=entries)
    add("response.content_part.done", **where, part={**part, "text": a.text})
    add("response.output_item.done", output_index=index, item=item)


def _responses_call_events(add: Any, item: dict[str, Any], index: int) -> None:
    add(
        "response.output_item.added",
        output_index=index,
        item={**item, "status": "in_progress", "arguments": ""},
    )
    raw = item["arguments"]
    step = max(1, len(raw) // 3)
    for i in range(0, len(raw), step):
        add(
            "response.function_call_arguments.delta",
            item_id=item["id"],
            output_index=index,
            delta=raw[i : i + step],
        )
    add("response.function_call_arguments.done", item_id=item["id"], output_index=index, arguments=raw)
    add("response.output_item.done", output_index=index, item=item)


def responses_error_event(message: str, sequence_number: int) -> bytes:
    body = {"type": "error", "sequence_number": sequence_number, "code": "server_error", "message": message}
    body["param"] = None
    return sse_event("error", body)


# ---------------------------------------------------------------- Anthropic Messages


def messages_usage(u: Usage, output_tokens: int | None = None, *, delta: bool = False) -> dict[str, Any]:
    """A Messages ``usage``; `delta`: as ``message_delta`` carries it (recorded: the cumulative counts
    without the breakdown and tier, which ``message_start`` gave)."""
    out: dict[str, Any] = {
        "input_tokens": u.input_tokens - u.cache_read_tokens - u.cache_write_tokens,
        "cache_creation_input_tokens": u.cache_write_tokens,
        "cache_read_input_tokens": u.cache_read_tokens,
    }
    if u.cache_write_1h_tokens is not None and not delta:
        out["cache_creation"] = {
            "ephemeral_5m_input_tokens": u.cache_write_tokens - u.cache_write_1h_tokens,
            "ephemeral_1h_input_tokens": u.cache_write_1h_tokens,
        }
    out["output_tokens"] = u.output_tokens if output_tokens is None else output_tokens
    if u.service_tier is not None and not delta:
        out["service_tier"] = u.service_tier
        out["inference_geo"] = "not_available"
    return out


def _messages_stop(a: Answer) -> str:
    if a.tool_calls:
        return "tool_use"
    return "max_tokens" if a.finish == "length" else "end_turn"


def _messages_blocks(a: Answer) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": a.text}] if a.text else []
    for i, c in enumerate(a.tool_calls):
        blocks.append({"type": "tool_use", "id": _call_id(c, i, "toolu_"), "name": c.name, "input": c.arguments})
    return blocks


def messages_body(a: Answer, model: str, rid: str) -> dict[str, Any]:
    return {
        "id": f"msg_{rid}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _messages_blocks(a),
        "stop_reason": _messages_stop(a),
        "stop_sequence": None,
        "usage": messages_usage(a.usage),
    }


def messages_events(a: Answer, model: str, rid: str) -> list[bytes]:
    start = {**messages_body(a, model, rid), "content": [], "stop_reason": None}
    start["usage"] = messages_usage(a.usage, output_tokens=1)
    out = [sse_event("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(_messages_blocks(a)):
        opening = {**block, "text": ""} if block["type"] == "text" else {**block, "input": {}}
        out.append(
            sse_event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        if index == 0:
            out.append(sse_event("ping", {"type": "ping"}))
        if block["type"] == "text":
            deltas = [{"type": "text_delta", "text": p} for p in a.text_pieces()]
        else:
            call = a.tool_calls[index - (1 if a.text else 0)]
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in ["", *_arg_pieces(call)]]
        for d in deltas:
            out.append(sse_event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}))
        out.append(sse_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    out.append(
        sse_event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": _messages_stop(a), "stop_sequence": None},
                "usage": messages_usage(a.usage, delta=True),
            },
        )
    )
    out.append(sse_event("message_stop", {"type": "message_stop"}))
    return out


def anthropic_error_type(status: int) -> str:
    return {
        400: "invalid_request_error",
        401: "authentication_error",
        402: "billing_error",
        403: "permission_error",
        404: "not_found_error",
        413: "request_too_large",
        429: "rate_limit_error",
        529: "overloaded_error",
    }.get(status, "api_error")


def anthropic_error(status: int, message: str, error_type: str | None) -> dict[str, Any]:
    err = {"type": error_type or anthropic_error_type(status), "message": message}
    return {"type": "error", "error": err, "request_id": "req_fake"}


def anthropic_error_event(message: str) -> bytes:
    return sse_event("error", anthropic_error(529, message, "overloaded_error"))


# ---------------------------------------------------------------- SSE framing


def sse_data(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def sse_event(name: str, obj: dict[str, Any]) -> bytes:
    return f"event: {name}\n".encode() + sse_data(obj)
