"""Chat Completions ``usage`` ↔ canonical `Usage`.

OpenAI ``prompt_tokens`` already includes cached, cache-write, audio and video tokens, and
``completion_tokens`` includes reasoning tokens, so the mapping is one to one. The processing tier is
the completion's (or chunk's) top-level ``service_tier``, beside ``usage``.
"""

from __future__ import annotations

import json
from typing import Any

from modelport.core.usage import Usage, as_count, as_optional_count, as_tier


def usage_from_wire(raw: Any, tier: object = None) -> Usage | None:
    """Canonical usage from a Chat ``usage`` object and the top-level ``service_tier`` beside it; None when
    the usage is absent or not an object."""
    if not isinstance(raw, dict):
        return None
    prompt = raw.get("prompt_tokens_details")
    completion = raw.get("completion_tokens_details")
    if not prompt and not completion:  # absent or null (or empty): no breakdown to read
        return Usage(
            input_tokens=as_count(raw.get("prompt_tokens")),
            output_tokens=as_count(raw.get("completion_tokens")),
            service_tier=as_tier(tier),
        )
    prompt = prompt if isinstance(prompt, dict) else {}
    completion = completion if isinstance(completion, dict) else {}
    return Usage(
        input_tokens=as_count(raw.get("prompt_tokens")),
        output_tokens=as_count(raw.get("completion_tokens")),
        cache_read_tokens=as_count(prompt.get("cached_tokens")),
        cache_write_tokens=as_count(prompt.get("cache_write_tokens")),
        reasoning_tokens=as_optional_count(completion.get("reasoning_tokens")),
        audio_input_tokens=as_count(prompt.get("audio_tokens")),
        video_input_tokens=as_count(prompt.get("video_tokens")),
        image_input_tokens=as_count(prompt.get("image_tokens")),
        service_tier=as_tier(tier),
    )


def usage_to_wire(usage: Usage, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """A Chat ``usage`` object. `base` (the upstream's own object, same protocol) keeps fields we do not
    model, such as ``accepted_prediction_tokens``; the canonical counts always win."""
    out: dict[str, Any] = dict(base) if base else {}
    prompt: dict[str, Any] = dict(out.get("prompt_tokens_details") or {})
    completion: dict[str, Any] = dict(out.get("completion_tokens_details") or {})
    out["prompt_tokens"] = usage.input_tokens
    out["completion_tokens"] = usage.output_tokens
    out["total_tokens"] = usage.input_tokens + usage.output_tokens
    prompt["cached_tokens"] = usage.cache_read_tokens
    prompt["audio_tokens"] = usage.audio_input_tokens
    if usage.cache_write_tokens or "cache_write_tokens" in prompt:
        prompt["cache_write_tokens"] = usage.cache_write_tokens
    if usage.video_input_tokens or "video_tokens" in prompt:
        prompt["video_tokens"] = usage.video_input_tokens
    if usage.image_input_tokens or "image_tokens" in prompt:
        prompt["image_tokens"] = usage.image_input_tokens
    if usage.reasoning_tokens is not None:
        completion["reasoning_tokens"] = usage.reasoning_tokens
    else:
        completion.pop("reasoning_tokens", None)  # unknown: the field is optional, so it is left out
    for key in ("audio_tokens", "accepted_prediction_tokens", "rejected_prediction_tokens"):
        completion.setdefault(key, 0)
    out["prompt_tokens_details"] = prompt
    out["completion_tokens_details"] = completion
    return out


def usage_from_body(body: dict[str, Any]) -> Usage | None:
    """Usage of a non-stream completion body (or of one stream chunk)."""
    return usage_from_wire(body.get("usage"), body.get("service_tier"))


class ChatUsageSniffer:
    """Fast path: remembers the latest non-null ``usage`` seen in relayed chunks."""

    def __init__(self) -> None:
        self._usage: Usage | None = None

    @property
    def usage(self) -> Usage | None:
        return self._usage

    def feed(self, event: str | None, data: str) -> None:
        # Cheap pre-check: almost every chunk has "usage":null or no usage at all.
        if '"usage"' not in data or '"usage":null' in data or '"usage": null' in data:
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            return
        if isinstance(chunk, dict):
            found = usage_from_wire(chunk.get("usage"), chunk.get("service_tier"))
            if found is not None:
                self._usage = found
