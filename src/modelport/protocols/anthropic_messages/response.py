"""Message object (non-stream response) ↔ `CanonicalResponse`.

The encoded body has exactly the real API's shape: ``{id: "msg_...", type: "message", role:
"assistant", model, content, stop_reason, stop_sequence, usage}`` with Anthropic usage semantics
(``input_tokens`` without cache reads/writes).
"""

from __future__ import annotations

import re
import secrets
import time
from typing import Any

from modelport.core.parts import OutputPart
from modelport.core.response import CanonicalResponse, StopReason
from modelport.protocols.anthropic_messages.content import PROTOCOL, block_from_part, part_from_block
from modelport.protocols.anthropic_messages.stop import stop_reason_from_wire, stop_reason_to_wire
from modelport.protocols.anthropic_messages.usage import usage_from_wire, usage_to_wire

_TOP_KNOWN = ("id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def message_id(value: str) -> str:
    """A ``msg_`` id: kept when it already is one, else derived from `value` (traceable), else random."""
    if value.startswith("msg_"):
        return value
    core = _NOT_ALNUM.sub("", value)
    return f"msg_{core or secrets.token_hex(12)}"


def decode_response(body: dict[str, Any]) -> CanonicalResponse:
    """Lenient: an upstream's answer is already paid for, so odd blocks are kept opaque, not fatal."""
    content: list[OutputPart] = []
    raw_content = body.get("content")
    for block in raw_content if isinstance(raw_content, list) else []:
        part = part_from_block(block)
        if part is not None:
            content.append(part)
    extras: dict[str, Any] = {k: v for k, v in body.items() if k not in _TOP_KNOWN}
    if isinstance(body.get("usage"), dict):
        extras["_usage"] = body["usage"]
    if isinstance(body.get("stop_reason"), str):
        extras["_stop_reason"] = body["stop_reason"]
    stop_sequence = body.get("stop_sequence")
    return CanonicalResponse(
        id=body["id"] if isinstance(body.get("id"), str) else "",
        model=body["model"] if isinstance(body.get("model"), str) else "",
        created=int(time.time()),  # Messages has no timestamp
        content=content,
        stop_reason=stop_reason_from_wire(body.get("stop_reason")),
        stop_sequence=stop_sequence if isinstance(stop_sequence, str) else None,
        usage=usage_from_wire(body.get("usage")),
        source_protocol=PROTOCOL,
        extras=extras,
    )


def encode_response(resp: CanonicalResponse, model: str) -> dict[str, Any]:
    """The message a Messages client receives; `model` is the name the client asked for."""
    hints = resp.extras_for(PROTOCOL)
    same = resp.source_protocol == PROTOCOL
    content = [block for block in (block_from_part(p, same) for p in resp.content) if block is not None]
    reason = resp.stop_reason or StopReason.END_TURN
    body: dict[str, Any] = {
        "id": message_id(resp.id),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason_to_wire(reason, hints.get("_stop_reason")),
        "stop_sequence": resp.stop_sequence if reason == StopReason.STOP_SEQUENCE else None,
        "usage": usage_to_wire(resp.usage, hints.get("_usage")),
    }
    body.update({k: v for k, v in hints.items() if not k.startswith("_")})
    return body
