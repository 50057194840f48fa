"""Error bodies as the three protocols' upstreams send them: each nests the error in an ``error`` object
with a ``message`` (OpenAI adds ``param`` and ``code``; Anthropic wraps it in ``{"type": "error", ...}``), in
a whole body or in a stream's error event."""

from __future__ import annotations

from typing import Any

import orjson

from modelport.core.codec import UpstreamFault


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def upstream_fault(body: bytes) -> UpstreamFault | None:
    """``{"error": {"message", "param", "code", ...}}`` (or ``{"error": "text"}``). Responses answers a model
    it does not know with 400 ``model_not_found`` rather than 404."""
    try:
        parsed: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, str):
        return UpstreamFault(message=error)
    if not isinstance(error, dict):
        return None
    code = _text(error.get("code"))
    message = error.get("message")
    return UpstreamFault(
        message=message if isinstance(message, str) else None,
        param=_text(error.get("param")),
        code=code,
        unknown_model=code == "model_not_found",
    )


def error_event_message(data: str) -> str | None:
    """The message of an in-stream error: ``error.message`` (Chat's error chunk; Responses' ``error`` event
    also as ``message``, ``response.failed`` as ``response.error.message``)."""
    try:
        parsed: Any = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(parsed, dict):
        return None
    response = parsed.get("response")
    for holder in (parsed.get("error"), response.get("error") if isinstance(response, dict) else None, parsed):
        if isinstance(holder, dict) and isinstance(holder.get("message"), str) and holder["message"]:
            return str(holder["message"])
    return None
