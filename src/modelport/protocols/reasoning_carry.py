"""Reasoning that crosses protocols in the client's hands and comes back on the next turn.

A client keeps the model's reasoning only in its own protocol's shape: an Anthropic ``thinking`` block's
``signature`` (Messages) or a ``reasoning`` item's ``encrypted_content`` (Responses). When the upstream
speaks the other protocol, the upstream's opaque token is wrapped into the client's opaque field, and
unwrapped when the client sends it back, so the upstream gets exactly what it issued:

- OpenAI reasoning → Messages client: ``signature = "mpr1." + base64url(JSON {"id", "enc"})`` (the item
  id and its ``encrypted_content``, either may be absent).
- Anthropic thinking → Responses client: ``encrypted_content = "mpa1." + base64url(JSON {"t", "s"})``
  (thinking text and signature) or ``{"r"}`` (a ``redacted_thinking`` block's data). The text is carried
  because Anthropic checks the signature against the exact text, and clients may re-word summaries.

The version prefix lets a decoder recognise our own wrapping (vendors' tokens never start with it) and
lets the format change later. Nothing here is secret: the payload is what the client already received;
the upstream's own signature still guards the content.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

import orjson

OPENAI_PREFIX = "mpr1."
ANTHROPIC_PREFIX = "mpa1."


def _pack(prefix: str, payload: dict[str, str]) -> str:
    return prefix + base64.urlsafe_b64encode(orjson.dumps(payload)).decode().rstrip("=")


def _unpack(prefix: str, token: str | None) -> dict[str, str] | None:
    if not token or not token.startswith(prefix):
        return None
    raw = token[len(prefix) :]
    try:
        payload = orjson.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
    except (binascii.Error, ValueError):
        return None
    if not isinstance(payload, dict) or not all(isinstance(v, str) for v in payload.values()):
        return None
    return payload


@dataclass(frozen=True, slots=True)
class OpenAIReasoning:
    id: str | None
    encrypted_content: str | None


@dataclass(frozen=True, slots=True)
class AnthropicThinking:
    text: str
    signature: str | None
    redacted: str | None


def wrap_openai(item_id: str | None, encrypted_content: str | None) -> str | None:
    """An Anthropic ``signature`` carrying an OpenAI reasoning item; None when there is nothing to carry."""
    payload = {k: v for k, v in (("id", item_id), ("enc", encrypted_content)) if v}
    return _pack(OPENAI_PREFIX, payload) if payload else None


def unwrap_openai(signature: str | None) -> OpenAIReasoning | None:
    payload = _unpack(OPENAI_PREFIX, signature)
    if payload is None:
        return None
    return OpenAIReasoning(payload.get("id"), payload.get("enc"))


def wrap_anthropic(text: str, signature: str | None, redacted: str | None) -> str | None:
    """A Responses ``encrypted_content`` carrying an Anthropic (redacted) thinking block; None when the block
    is unsigned (Anthropic would refuse it back anyway)."""
    if redacted is not None:
        return _pack(ANTHROPIC_PREFIX, {"r": redacted})
    if not signature:
        return None
    return _pack(ANTHROPIC_PREFIX, {"t": text, "s": signature})


def unwrap_anthropic(encrypted_content: str | None) -> AnthropicThinking | None:
    payload = _unpack(ANTHROPIC_PREFIX, encrypted_content)
    if payload is None:
        return None
    if "r" in payload:
        return AnthropicThinking("", None, payload["r"])
    if "s" not in payload:
        return None
    return AnthropicThinking(payload.get("t", ""), payload["s"], None)
