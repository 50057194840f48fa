"""Responses ``usage`` ↔ canonical `Usage`.

``input_tokens`` already includes ``input_tokens_details.cached_tokens`` (and cache writes), and
``output_tokens`` includes ``output_tokens_details.reasoning_tokens``, as canonical usage expects. The
processing tier is the response's top-level ``service_tier``, beside ``usage``.
"""

from __future__ import annotations

import json
from typing import Any

from modelport.core.usage import Usage, as_count, as_optional_count, as_tier

# Terminal events carry the final usage in `response.usage`; no other event has usage.
TERMINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


def _details(raw: dict[str, Any], key: str) -> dict[str, Any]:
    value = raw.get(key)
    return value if isinstance(value, dict) else {}


def usage_from_wire(raw: Any, tier: object = None) -> Usage | None:
    """Canonical usage from a Responses ``usage`` object and the response's ``service_tier``; None when the
    usage is absent or not an object."""
    if not isinstance(raw, dict):
        return None
    inp = _details(raw, "input_tokens_details")
    out = _details(raw, "output_tokens_details")
    return Usage(
        input_tokens=as_count(raw.get("input_tokens")),
        output_tokens=as_count(raw.get("output_tokens")),
        cache_read_tokens=as_count(inp.get("cached_tokens")),
        cache_write_tokens=as_count(inp.get("cache_write_tokens")),
        reasoning_tokens=as_optional_count(out.get("reasoning_tokens")),
        audio_input_tokens=as_count(inp.get("audio_tokens")),
        image_input_tokens=as_count(inp.get("image_tokens")),
        service_tier=as_tier(tier),
    )


def usage_to_wire(usage: Usage, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """A Responses ``usage`` object. `base` (the upstream's own object, same protocol) keeps fields we do
    not model; the canonical counts always win. ``cache_write_tokens`` is required by the current schema."""
    out: dict[str, Any] = dict(base) if base else {}
    inp: dict[str, Any] = dict(out.get("input_tokens_details") or {})
    outd: dict[str, Any] = dict(out.get("output_tokens_details") or {})
    inp["cached_tokens"] = usage.cache_read_tokens
    inp["cache_write_tokens"] = usage.cache_write_tokens
    # The schema requires the field: an upstream that did not say is reported as 0 here (Chat leaves it out).
    outd["reasoning_tokens"] = usage.reasoning_tokens or 0
    out["input_tokens"] = usage.input_tokens
    out["input_tokens_details"] = inp
    out["output_tokens"] = usage.output_tokens
    out["output_tokens_details"] = outd
    out["total_tokens"] = usage.input_tokens + usage.output_tokens
    return out


def usage_from_body(body: dict[str, Any]) -> Usage | None:
    """Usage of a non-stream Response body (or of a terminal stream event carrying ``response``)."""
    if isinstance(body.get("response"), dict) and "usage" not in body:
        body = body["response"]
    return usage_from_wire(body.get("usage"), body.get("service_tier"))


class ResponsesUsageSniffer:
    """Fast path: reads usage from the terminal event (``response.completed`` / ``.incomplete`` /
    ``.failed``) of a relayed stream; every other event is skipped without parsing."""

    def __init__(self) -> None:
        self._usage: Usage | None = None

    @property
    def usage(self) -> Usage | None:
        return self._usage

    def feed(self, event: str | None, data: str) -> None:
        if event is not None and event not in TERMINAL_EVENTS:
            return
        if '"usage"' not in data:
            return
        try:
            payload = json.loads(data)
        except ValueError:
            return
        if not isinstance(payload, dict) or payload.get("type") not in TERMINAL_EVENTS:
            return
        response = payload.get("response")
        if isinstance(response, dict):
            found = usage_from_wire(response.get("usage"), response.get("service_tier"))
            if found is not None:
                self._usage = found
