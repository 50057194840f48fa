"""Model-produced content blocks (``text``, ``thinking``, ``redacted_thinking``, ``tool_use``) ↔ parts.

Used for response bodies and for assistant turns of requests. Block fields without a canonical slot
(``citations``, ``cache_control``, ``caller``) travel in the part's `extras` and are written back only
when the part came from this protocol (`same`). Other block types (server tools and their results,
``compaction``, ...) become `OpaquePart`s and are written back verbatim, again only for `same`.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic_core

from modelport.core.parts import (
    InputPart,
    OpaquePart,
    OutputPart,
    ReasoningPart,
    RefusalPart,
    TextPart,
    ToolCallPart,
)
from modelport.protocols.reasoning_carry import wrap_openai

PROTOCOL = "anthropic_messages"

_KNOWN = {
    "text": ("type", "text"),
    "thinking": ("type", "thinking", "signature"),
    "redacted_thinking": ("type", "data"),
    "tool_use": ("type", "id", "name", "input"),
}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _rest(block: dict[str, Any]) -> dict[str, Any]:
    known = _KNOWN.get(block.get("type", ""), ("type",))
    return {k: v for k, v in block.items() if k not in known}


def arguments_from_input(value: Any) -> str:
    """The JSON text of a ``tool_use.input`` object (canonical tool calls carry JSON text)."""
    return json.dumps(value if isinstance(value, dict) else {}, ensure_ascii=False, separators=(",", ":"))


def input_from_arguments(arguments: str) -> dict[str, Any]:
    """A ``tool_use.input`` object from JSON text. Text cut short (a stream stopped by ``max_tokens`` inside a
    tool call) is parsed as far as it goes, like the SDKs do; anything that is not an object gives ``{}``."""
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        try:
            value = pydantic_core.from_json(arguments, allow_partial=True)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def part_from_block(block: Any) -> OutputPart | None:
    """Lenient: an upstream's block that cannot be read is kept opaque (or skipped if not even an object)."""
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    extras = _rest(block)
    if kind == "text":
        return TextPart(text=_str(block.get("text")), extras=extras)
    if kind == "thinking":
        signature = block.get("signature")
        return ReasoningPart(
            text=_str(block.get("thinking")), signature=signature if isinstance(signature, str) else None, extras=extras
        )
    if kind == "redacted_thinking":
        return ReasoningPart(redacted=_str(block.get("data")), extras=extras)
    if kind == "tool_use":
        return ToolCallPart(
            id=_str(block.get("id")),
            name=_str(block.get("name")),
            arguments=arguments_from_input(block.get("input")),
            extras=extras,
        )
    return OpaquePart(protocol=PROTOCOL, data=dict(block))


def block_from_part(part: InputPart, same: bool) -> dict[str, Any] | None:
    """The block of a model-produced part; None for parts Messages cannot carry here."""
    extras = part.extras if same else {}
    if isinstance(part, TextPart | RefusalPart):
        return {"type": "text", "text": part.text, **extras}
    if isinstance(part, ReasoningPart):
        return reasoning_block(part, extras)
    if isinstance(part, ToolCallPart):
        return {
            "type": "tool_use",
            "id": part.id,
            "name": part.name,
            "input": input_from_arguments(part.arguments),
            **extras,
        }
    if isinstance(part, OpaquePart) and part.protocol == PROTOCOL:
        return dict(part.data)
    return None


def reasoning_block(part: ReasoningPart, extras: dict[str, Any]) -> dict[str, Any] | None:
    """A (redacted) thinking block. OpenAI reasoning (an item id and/or encrypted content, no signature) is
    carried in the signature (`protocols.reasoning_carry`), so the client can send it back on the next turn."""
    if part.redacted is not None:
        return {"type": "redacted_thinking", "data": part.redacted, **extras}
    signature = part.signature or wrap_openai(part.id, part.encrypted_content)
    if not part.text and not signature:
        return None  # nothing to show and nothing to send back
    return {"type": "thinking", "thinking": part.text, "signature": signature or "", **extras}
