"""Chat Completions request → llama.cpp call for the embedded model, and the response dicts back.

Accepted: `messages` (roles system, developer, user, assistant, tool; content a string, null or a list of
``text`` parts), `max_completion_tokens` / `max_tokens`, `temperature`, `top_p`, `stop`, `seed`,
`presence_penalty`, `frequency_penalty`, `response_format` (``json_object`` / ``json_schema`` become a
grammar), `stream`, `stream_options.include_usage`, `n` = 1.

Rejected with 400 naming the field (the model cannot do them): `n` other than 1; `tool_choice` that
forces a call (``required`` or a named function) and `function_call` naming a function; image, audio,
file or other non-text content parts; `audio` output and `modalities` containing ``audio``.

Ignored: `tools` / `functions` when no call is forced (the model answers in text), assistant
`tool_calls`, `logprobs`, `top_logprobs`, `logit_bias`, `user`, `metadata`, `store`, `service_tier`,
`parallel_tool_calls`, `reasoning_effort`, `prediction`, `prompt_cache_key` and any other field.
Tool results (`role: tool`) are shown to the model as user turns.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from modelport.errors import InvalidParameters

# SmolLM2's model card recommends these sampling settings; OpenAI's own defaults (1.0) make a
# 135M model ramble.
DEFAULT_TEMPERATURE = 0.2
DEFAULT_TOP_P = 0.9

_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
_ROLES |= {"tool": "user", "function": "user"}


@dataclass(frozen=True)
class LocalRequest:
    """A validated request: chat messages for the GGUF's template and the sampling settings."""

    messages: list[dict[str, str]]
    params: dict[str, Any] = field(default_factory=dict)
    include_usage: bool = False


def parse_request(body: Mapping[str, Any], *, default_max_tokens: int) -> LocalRequest:
    """Validate a Chat Completions body for the local model; raise `InvalidParameters` naming the field."""
    _reject_unsupported(body)
    params: dict[str, Any] = {
        "max_tokens": _max_tokens(body, default_max_tokens),
        "temperature": _number(body, "temperature", 0.0, 2.0, DEFAULT_TEMPERATURE),
        "top_p": _number(body, "top_p", 0.0, 1.0, DEFAULT_TOP_P),
        "presence_penalty": _number(body, "presence_penalty", -2.0, 2.0, 0.0),
        "frequency_penalty": _number(body, "frequency_penalty", -2.0, 2.0, 0.0),
    }
    stop = _stop(body.get("stop"))
    if stop:
        params["stop"] = stop
    seed = body.get("seed")
    if seed is not None:
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise InvalidParameters("seed must be an integer", param="seed")
        params["seed"] = seed
    response_format = _response_format(body.get("response_format"))
    if response_format is not None:
        params["response_format"] = response_format
    options = body.get("stream_options") or {}
    include_usage = bool(options.get("include_usage")) if isinstance(options, Mapping) else False
    return LocalRequest(messages=_messages(body.get("messages")), params=params, include_usage=include_usage)


def _reject_unsupported(body: Mapping[str, Any]) -> None:
    n = body.get("n")
    if n is not None and n != 1:
        raise InvalidParameters("the local model generates one choice only: n must be 1", param="n")
    choice = body.get("tool_choice")
    if choice == "required" or isinstance(choice, Mapping):
        raise InvalidParameters("the local model cannot call tools", param="tool_choice")
    if isinstance(body.get("function_call"), Mapping):
        raise InvalidParameters("the local model cannot call functions", param="function_call")
    if body.get("audio") is not None:
        raise InvalidParameters("the local model cannot produce audio", param="audio")
    modalities = body.get("modalities")
    if isinstance(modalities, list) and "audio" in modalities:
        raise InvalidParameters("the local model cannot produce audio", param="modalities")


def _messages(raw: Any) -> list[dict[str, str]]:
    if not isinstance(raw, list) or not raw:
        raise InvalidParameters("messages must be a non-empty array", param="messages")
    out: list[dict[str, str]] = []
    for i, message in enumerate(raw):
        if not isinstance(message, Mapping):
            raise InvalidParameters("each message must be an object", param=f"messages[{i}]")
        role = _ROLES.get(str(message.get("role")))
        if role is None:
            raise InvalidParameters(f"unsupported role {message.get('role')!r}", param=f"messages[{i}].role")
        out.append({"role": role, "content": _content(message.get("content"), f"messages[{i}].content")})
    return out


def _content(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise InvalidParameters("content must be a string or an array of parts", param=where)
    texts: list[str] = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            texts.append(part["refusal"])
        elif kind in ("image_url", "input_image", "image"):
            raise InvalidParameters("the local model does not accept images", param=f"{where}[{j}]")
        elif kind in ("input_audio", "audio"):
            raise InvalidParameters("the local model does not accept audio", param=f"{where}[{j}]")
        else:
            raise InvalidParameters(f"unsupported content part type {kind!r}", param=f"{where}[{j}]")
    return "\n".join(texts)


def _max_tokens(body: Mapping[str, Any], default: int) -> int:
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InvalidParameters(f"{name} must be a positive integer", param=name)
        return value
    return default


def _number(body: Mapping[str, Any], name: str, low: float, high: float, default: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, int | float) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidParameters(f"{name} must be a number between {low:g} and {high:g}", param=name)
    return float(value)


def _stop(stop: Any) -> list[str]:
    if stop is None:
        return []
    items = [stop] if isinstance(stop, str) else stop
    if not isinstance(items, list) or len(items) > 4 or not all(isinstance(s, str) and s for s in items):
        raise InvalidParameters("stop must be a string or up to 4 strings", param="stop")
    return list(items)


def _response_format(fmt: Any) -> dict[str, Any] | None:
    if fmt is None:
        return None
    kind = fmt.get("type") if isinstance(fmt, Mapping) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
        if isinstance(schema, Mapping):
            return {"type": "json_object", "schema": dict(schema)}
        return {"type": "json_object"}
    raise InvalidParameters("response_format type must be text, json_object or json_schema", param="response_format")


# ---------------------------------------------------------------- response dicts


def new_completion_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex


def usage_dict(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def completion_dict(
    cid: str, model: str, text: str, finish_reason: str, prompt_tokens: int, completion_tokens: int
) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": usage_dict(prompt_tokens, completion_tokens),
    }


def chunk_dict(
    cid: str, created: int, model: str, delta: dict[str, Any], finish_reason: str | None, include_usage: bool
) -> dict[str, Any]:
    chunk: dict[str, Any] = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }
    if include_usage:
        chunk["usage"] = None
    return chunk


def usage_chunk_dict(cid: str, created: int, model: str, prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [],
        "usage": usage_dict(prompt_tokens, completion_tokens),
    }
