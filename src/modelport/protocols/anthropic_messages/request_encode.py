"""`CanonicalRequest` → Messages request body for an Anthropic-kind upstream.

From a Messages client (same protocol) the body is rebuilt faithfully: string-vs-blocks shapes,
``cache_control`` and other block fields, server tools and opaque blocks, raw ``thinking``/``metadata``
and unknown top-level fields all come back. From another protocol, only what Messages can express is
sent: ``tool`` turns become ``user`` turns of ``tool_result`` blocks, reasoning without an Anthropic
signature is dropped (the API would reject it), and media Messages cannot take is a 400.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from modelport.core.messages import CanonicalRequest, Message, ReasoningConfig, ToolChoice, ToolSpec
from modelport.core.parts import (
    AudioPart,
    FilePart,
    ImagePart,
    InputPart,
    OpaquePart,
    ReasoningPart,
    RefusalPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from modelport.errors import InvalidParameters
from modelport.protocols.anthropic_messages.content import PROTOCOL, block_from_part

# Messages requires max_tokens; a client of another protocol may not have sent a cap.
DEFAULT_MAX_TOKENS = 4096
MIN_THINKING_BUDGET = 1024
_EFFORT_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768}


def encode_request(req: CanonicalRequest, upstream_model: str) -> dict[str, Any]:
    same = req.source_protocol == PROTOCOL
    hints = req.extras_for(PROTOCOL)
    max_tokens = req.max_output_tokens or DEFAULT_MAX_TOKENS
    body: dict[str, Any] = {"model": upstream_model, "max_tokens": max_tokens}
    system = _encode_system(req.system, same, bool(hints.get("_system_string")))
    if system is not None:
        body["system"] = system
    body["messages"] = _encode_messages(req.messages, same)
    thinking = None if same else _thinking(req.reasoning, max_tokens)
    if thinking is not None:
        body["thinking"] = thinking
    if req.stop:
        body["stop_sequences"] = list(req.stop)
    # Extended thinking refuses custom sampling; a client of another protocol cannot know that.
    if req.temperature is not None and (same or thinking is None):
        body["temperature"] = min(req.temperature, 1.0)  # Chat allows up to 2, Messages up to 1
    if req.top_p is not None and (same or thinking is None):
        body["top_p"] = req.top_p
    tools = [_encode_tool(t, same) for t in req.tools]
    for position, raw in hints.get("_server_tools", []):
        tools.insert(min(position, len(tools)), raw)
    if tools:
        body["tools"] = tools
        choice = _encode_tool_choice(req.tool_choice, req.parallel_tool_calls)
        if choice is not None:
            body["tool_choice"] = choice
    if req.user:
        body["metadata"] = {"user_id": req.user}
    body["stream"] = req.stream
    body.update({k: v for k, v in hints.items() if not k.startswith("_")})
    return body


def _encode_system(parts: list[TextPart], same: bool, was_string: bool) -> str | list[dict[str, Any]] | None:
    if not parts:
        return "" if same and was_string else None
    if not same or (was_string and len(parts) == 1 and not parts[0].extras):
        return "\n\n".join(p.text for p in parts)
    return [{"type": "text", "text": p.text, **p.extras} for p in parts]


def _thinking(reasoning: ReasoningConfig | None, max_tokens: int) -> dict[str, Any] | None:
    if reasoning is None or not reasoning.enabled:
        return None
    budget = reasoning.budget_tokens or _EFFORT_BUDGETS.get(reasoning.effort or "", 0)
    budget = min(budget, max_tokens - 1)  # the API wants budget_tokens < max_tokens
    if budget < MIN_THINKING_BUDGET:
        return None
    return {"type": "enabled", "budget_tokens": budget}


def _encode_tool(tool: ToolSpec, same: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        out["description"] = tool.description
    out["input_schema"] = tool.parameters if tool.parameters is not None else {"type": "object", "properties": {}}
    if same:
        if tool.strict is not None:
            out["strict"] = tool.strict
        out.update(tool.extras)
    return out


def _encode_tool_choice(choice: ToolChoice | None, parallel: bool | None) -> dict[str, Any] | None:
    if choice is None and parallel is None:
        return None
    out: dict[str, Any]
    if choice is None or choice.mode == "auto":
        out = {"type": "auto"}
    elif choice.mode == "none":
        out = {"type": "none"}
    elif choice.mode == "required":
        out = {"type": "any"}
    else:
        out = {"type": "tool", "name": choice.name or ""}
    if parallel is not None and out["type"] != "none":
        out["disable_parallel_tool_use"] = not parallel
    return out


def _encode_messages(messages: list[Message], same: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = "assistant" if msg.role == "assistant" else "user"  # tool results travel in user turns
        blocks = [b for b in (_encode_part(p, msg.role, same) for p in msg.parts) if b is not None]
        if not blocks:
            continue  # the API rejects empty content
        if not same and out and out[-1]["role"] == role:
            # Chat sends one `tool` message per result: Messages wants them in one user turn.
            previous = out[-1]["content"]
            out[-1]["content"] = (
                [{"type": "text", "text": previous}] if isinstance(previous, str) else previous
            ) + blocks
            continue
        out.append({"role": role, "content": _content(blocks, msg, same), **_msg_extras(msg, same)})
    return out


def _msg_extras(msg: Message, same: bool) -> dict[str, Any]:
    return {k: v for k, v in msg.extras.items() if not k.startswith("_")} if same else {}


def _content(blocks: list[dict[str, Any]], msg: Message, same: bool) -> str | list[dict[str, Any]]:
    """The string shorthand when the client used it (or, across protocols, for one plain text block)."""
    single_text = len(blocks) == 1 and blocks[0].get("type") == "text" and len(blocks[0]) == 2
    if single_text and (msg.extras.get("_string") if same else msg.role == "user"):
        return str(blocks[0]["text"])
    return blocks


def _encode_part(part: InputPart, role: str, same: bool) -> dict[str, Any] | None:
    extras = part.extras if same else {}
    if isinstance(part, ImagePart):
        return _image(part, extras)
    if isinstance(part, FilePart):
        return _document(part, same)
    if isinstance(part, AudioPart):
        raise InvalidParameters("Audio input is not supported by this model.", param="messages")
    if isinstance(part, ToolResultPart):
        return _tool_result(part, same)
    if isinstance(part, ReasoningPart) and (role != "assistant" or not (same or part.signature or part.redacted)):
        return None  # only a block signed by Anthropic can be replayed; other reasoning is dropped
    if isinstance(part, TextPart | RefusalPart | ReasoningPart | ToolCallPart | OpaquePart):
        return block_from_part(part, same)
    return None


def _image(part: ImagePart, extras: dict[str, Any]) -> dict[str, Any]:
    if part.data is not None:
        source = {"type": "base64", "media_type": part.media_type or "image/png", "data": part.data}
    else:
        source = {"type": "url", "url": part.url or ""}
    return {"type": "image", "source": source, **extras}


def _document(part: FilePart, same: bool) -> dict[str, Any]:
    extras = {k: v for k, v in part.extras.items() if not k.startswith("_")} if same else {}
    if not same and part.filename:
        extras["title"] = part.filename
    media_type = part.media_type or ""
    if media_type.startswith("image/"):
        return _image(ImagePart(url=part.url, data=part.data, media_type=media_type), extras)
    source: dict[str, Any]
    if part.data is not None and media_type.startswith("text/"):
        source = {"type": "text", "media_type": "text/plain", "data": _b64_text(part.data)}
    elif part.data is not None and media_type in ("application/pdf", ""):
        source = {"type": "base64", "media_type": "application/pdf", "data": part.data}
    elif part.url is not None and media_type in ("application/pdf", ""):
        source = {"type": "url", "url": part.url}
    else:
        raise InvalidParameters(
            f"File input of type '{media_type or 'unknown'}' is not supported by this model "
            "(PDF and plain-text documents only).",
            param="messages",
        )
    return {"type": "document", "source": source, **extras}


def _b64_text(data: str) -> str:
    try:
        return base64.b64decode(data).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError) as exc:
        raise InvalidParameters("Invalid base64 text document.", param="messages") from exc


def _tool_result(part: ToolResultPart, same: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.tool_call_id}
    extras = part.extras if same else {}
    if "_content" in extras:
        out["content"] = extras["_content"]
    elif isinstance(part.content, str):
        out["content"] = part.content
    else:
        out["content"] = [
            _image(p, p.extras if same else {})
            if isinstance(p, ImagePart)
            else {"type": "text", "text": p.text, **(p.extras if same else {})}
            for p in part.content
        ]
    if part.is_error or extras.get("_is_error_false"):
        out["is_error"] = part.is_error
    out.update({k: v for k, v in extras.items() if not k.startswith("_")})
    return out
