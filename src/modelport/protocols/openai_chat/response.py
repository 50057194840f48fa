"""Chat completion object (non-stream) ↔ `CanonicalResponse`.

Only the first choice is canonical. Other choices (``n`` > 1) and fields without a canonical slot are
kept in `extras` so a Chat client of a Chat upstream gets them back. Upstream-compatible servers that
return ``reasoning_content`` (vLLM, DeepSeek) or ``reasoning`` get a `ReasoningPart`; Chat clients do not
receive reasoning (OpenAI's Chat API has no such field).
"""

from __future__ import annotations

import time
from typing import Any

from modelport.core.parts import OutputPart, ReasoningPart, RefusalPart, TextPart, ToolCallPart
from modelport.core.response import CanonicalResponse
from modelport.protocols.openai_chat.finish import finish_reason_to_wire, stop_reason_from_wire
from modelport.protocols.openai_chat.usage import usage_from_wire, usage_to_wire
from modelport.protocols.openai_common import chat_logprobs, logprob_entries

PROTOCOL = "openai_chat"

_TOP_KNOWN = ("id", "object", "created", "model", "choices", "usage")
_CHOICE_KNOWN = ("index", "message", "finish_reason")
_MESSAGE_KNOWN = ("role", "content", "refusal", "tool_calls", "reasoning_content", "reasoning")


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def decode_response(body: dict[str, Any]) -> CanonicalResponse:
    """Lenient: an upstream's answer is already paid for, so odd fields are skipped, not fatal."""
    choices = body.get("choices")
    choice: dict[str, Any] = (
        choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    )
    message = choice.get("message")
    message = message if isinstance(message, dict) else {}

    content: list[OutputPart] = []
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        content.append(ReasoningPart(text=reasoning))
    if isinstance(message.get("content"), str) and message["content"]:
        logprobs = choice.get("logprobs")
        entries = logprob_entries(logprobs.get("content")) if isinstance(logprobs, dict) else None
        content.append(TextPart(text=message["content"], logprobs=entries))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        content.append(RefusalPart(text=refusal))
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            fn: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else {}
            content.append(
                ToolCallPart(id=_str(call.get("id")), name=_str(fn.get("name")), arguments=_str(fn.get("arguments")))
            )

    extras: dict[str, Any] = {k: v for k, v in body.items() if k not in _TOP_KNOWN}
    extras["_choice"] = {k: v for k, v in choice.items() if k not in _CHOICE_KNOWN}
    extras["_message"] = {k: v for k, v in message.items() if k not in _MESSAGE_KNOWN}
    extras["_message_nulls"] = [k for k in ("content", "refusal") if k in message and message[k] is None]
    if isinstance(choices, list) and len(choices) > 1:
        extras["_other_choices"] = choices[1:]
    if isinstance(body.get("usage"), dict):
        extras["_usage"] = body["usage"]
    created = body.get("created")
    return CanonicalResponse(
        id=_str(body.get("id")),
        model=_str(body.get("model")),
        created=created if isinstance(created, int) else int(time.time()),
        content=content,
        stop_reason=stop_reason_from_wire(
            choice.get("finish_reason"), refused=bool(refusal) and not message.get("content")
        ),
        usage=usage_from_wire(body.get("usage"), body.get("service_tier")),
        source_protocol=PROTOCOL,
        extras=extras,
    )


def encode_message(resp: CanonicalResponse, hints: dict[str, Any]) -> dict[str, Any]:
    """The assistant ``message`` of the first choice."""
    text = "".join(p.text for p in resp.content if isinstance(p, TextPart))
    refusal = resp.refusal
    calls = resp.tool_calls
    nulls = hints.get("_message_nulls", ["content", "refusal"])
    message: dict[str, Any] = {"role": "assistant"}
    if text or not (calls or refusal) or "content" in nulls:
        message["content"] = text or (None if calls or refusal else "")
    if refusal is not None or "refusal" in nulls:
        message["refusal"] = refusal
    message.update(hints.get("_message", {} if hints else {"annotations": []}))
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _arguments(c.arguments)}}
            for c in calls
        ]
    return message


def _arguments(text: str) -> str:
    """Never "": OpenAI clients parse the arguments as JSON (a tool without input from Anthropic has none)."""
    return text if text.strip() else "{}"


def _logprobs(resp: CanonicalResponse) -> dict[str, Any] | None:
    """Log probabilities from another protocol's answer (a Responses upstream's `output_text` logprobs)."""
    entries = [e for p in resp.content if isinstance(p, TextPart) for e in p.logprobs or ()]
    return chat_logprobs(entries)


def encode_response(resp: CanonicalResponse, model: str) -> dict[str, Any]:
    """The completion object a Chat client receives; `model` is the name the client asked for."""
    hints = resp.extras_for(PROTOCOL)
    choice: dict[str, Any] = {
        "index": 0,
        "message": encode_message(resp, hints),
        **hints.get("_choice", {"logprobs": _logprobs(resp)}),
        "finish_reason": finish_reason_to_wire(resp.stop_reason) if resp.stop_reason else "stop",
    }
    body: dict[str, Any] = {
        "id": resp.id,
        "object": "chat.completion",
        "created": resp.created,
        "model": model,
        "choices": [choice, *hints.get("_other_choices", [])],
    }
    body.update({k: v for k, v in hints.items() if not k.startswith("_")})
    if resp.usage is not None:
        body["usage"] = usage_to_wire(resp.usage, hints.get("_usage"))
    return body
