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

from modelport.core.messages import CanonicalRequest, Message, ReasoningConfig, ResponseFormat, ToolChoice, ToolSpec
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
from modelport.protocols.responses_tools_carry import carried_tools

# Messages requires max_tokens; a client of another protocol may not have sent a cap. The gateway always
# sets one before encoding (the deployment's maximum output, `gateway.upstream_call`); this is the codec's
# own fallback for other callers.
DEFAULT_MAX_TOKENS = 4096
MIN_THINKING_BUDGET = 1024
MIN_ANSWER_TOKENS = 1024
_EFFORT_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768}


def encode_request(req: CanonicalRequest, upstream_model: str) -> dict[str, Any]:
    same = req.source_protocol == PROTOCOL
    hints = req.extras_for(PROTOCOL)
    max_tokens = req.max_output_tokens or DEFAULT_MAX_TOKENS
    body: dict[str, Any] = {"model": upstream_model, "max_tokens": max_tokens}
    turns = req.messages
    system_parts = req.system
    if not same and any(m.role == "system" for m in turns):
        # Without the client's beta, a mid-conversation system turn can only join the system prompt.
        system_parts = system_parts + [
            p for m in turns if m.role == "system" for p in m.parts if isinstance(p, TextPart)
        ]
        turns = [m for m in turns if m.role != "system"]
    system = _encode_system(system_parts, same, bool(hints.get("_system_string")))
    if system is not None:
        body["system"] = system
    body["messages"] = _encode_messages(turns, same)
    thinking = None if same else _thinking(req.reasoning, max_tokens)
    if thinking is not None and not _thinking_replayable(body["messages"]):
        # The turn being answered has no signed thinking (it came through a protocol that cannot carry
        # one): Anthropic refuses such a request with thinking on, so this turn runs without it.
        thinking = None
    if thinking is not None:
        body["thinking"] = thinking
    if req.stop:
        body["stop_sequences"] = list(req.stop)
    # Extended thinking refuses custom sampling; a client of another protocol cannot know that.
    if req.temperature is not None and (same or thinking is None):
        body["temperature"] = min(req.temperature, 1.0)  # Chat allows up to 2, Messages up to 1
    if req.top_p is not None and (same or thinking is None):
        body["top_p"] = req.top_p
    tools = [_encode_tool(t, same) for t in [*req.tools, *carried_tools(req, PROTOCOL)]]
    for position, raw in hints.get("_server_tools", []):
        tools.insert(min(position, len(tools)), raw)
    if tools:
        body["tools"] = tools
        choice = _encode_tool_choice(req.tool_choice, req.parallel_tool_calls)
        if choice is not None:
            body["tool_choice"] = choice
    if req.user:
        body["metadata"] = {"user_id": req.user}
    output_format = None if same else _output_format(req.response_format)
    if output_format is not None:
        body["output_config"] = {"format": output_format}
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
    """Thinking from another protocol's reasoning settings. The budget leaves room for the answer (at least
    `MIN_ANSWER_TOKENS`, or a quarter of the cap) and meets the API's minimum, else thinking stays off."""
    if reasoning is None or not reasoning.enabled:
        return None
    if reasoning.effort == "none":
        return None
    wanted = reasoning.budget_tokens or _EFFORT_BUDGETS.get(reasoning.effort or "medium", _EFFORT_BUDGETS["medium"])
    budget = min(wanted, max_tokens - max(MIN_ANSWER_TOKENS, max_tokens // 4))
    if budget < MIN_THINKING_BUDGET:
        return None
    return {"type": "enabled", "budget_tokens": budget}


def _output_format(fmt: ResponseFormat | None) -> dict[str, Any] | None:
    """Structured output from an OpenAI client: Messages' ``output_config.format`` takes a JSON schema
    (``json_object`` becomes the schema of any object)."""
    if fmt is None or fmt.type == "text":
        return None
    schema = fmt.schema if fmt.type == "json_schema" and fmt.schema is not None else {"type": "object"}
    return {"type": "json_schema", "schema": schema}


def _thinking_replayable(messages: list[dict[str, Any]]) -> bool:
    """Whether a request with thinking on is one Anthropic accepts: when the last turn answers tool calls, the
    assistant turn that made them must start with a (redacted) thinking block."""
    if len(messages) < 2 or messages[-1]["role"] != "user" or messages[-2]["role"] != "assistant":
        return True
    content = messages[-2]["content"]
    blocks = content if isinstance(content, list) else []
    if not any(b.get("type") == "tool_use" for b in blocks):
        return True
    return bool(blocks) and blocks[0].get("type") in ("thinking", "redacted_thinking")


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
        # Tool results travel in user turns; a system turn only comes from a Messages client.
        role = msg.role if msg.role in ("assistant", "system") else "user"
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
    if isinstance(part, ReasoningPart) and not _replayable(part, role, same):
        return None  # only a block signed by Anthropic can be replayed; other reasoning is dropped
    if isinstance(part, TextPart | RefusalPart | ReasoningPart | ToolCallPart | OpaquePart):
        return block_from_part(part, same)
    return None


def _replayable(part: ReasoningPart, role: str, same: bool) -> bool:
    if role != "assistant":
        return False
    if part.signature or part.redacted is not None:
        return True
    # From a Messages client, an unsigned block goes as sent, unless it is OpenAI reasoning we carried.
    return same and part.id is None and part.encrypted_content is None


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
