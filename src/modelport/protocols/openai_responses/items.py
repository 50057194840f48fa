"""Output items of a Response (``message``, ``function_call``, ``reasoning``) and their ids.

Shared by the non-stream encoder and the stream encoder so both produce the same item shapes, which are
those of the real API (``output_text`` parts always carry ``annotations`` and ``logprobs``).
"""

from __future__ import annotations

import secrets
from typing import Any

# Ids this gateway invents get this infix after the prefix, so reasoning items we made up (e.g. from an
# Anthropic thinking block) are never replayed to OpenAI, which would not know them.
_GENERATED = "mp"


def new_id(prefix: str) -> str:
    """A fresh item id in the API's style (``msg_...``, ``fc_...``, ``rs_...``, ``resp_...``)."""
    return f"{prefix}_{_GENERATED}{secrets.token_hex(24)}"


def is_generated_id(value: str) -> bool:
    _, sep, rest = value.partition("_")
    return bool(sep) and rest.startswith(_GENERATED) and len(rest) == len(_GENERATED) + 48


def output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}


def refusal_content(text: str) -> dict[str, Any]:
    return {"type": "refusal", "refusal": text}


def message_item(item_id: str, content: list[dict[str, Any]], status: str) -> dict[str, Any]:
    return {"id": item_id, "type": "message", "status": status, "content": content, "role": "assistant"}


def function_call_item(item_id: str, call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": call_id,
        "name": name,
    }


def summary_text(text: str) -> dict[str, Any]:
    return {"type": "summary_text", "text": text}


def reasoning_item(item_id: str, text: str, encrypted_content: str | None) -> dict[str, Any]:
    item: dict[str, Any] = {"id": item_id, "type": "reasoning"}
    if encrypted_content is not None:
        item["encrypted_content"] = encrypted_content
    item["summary"] = [summary_text(text)] if text else []
    return item
