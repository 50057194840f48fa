"""Messages ``usage`` ↔ canonical `Usage`.

Anthropic's ``input_tokens`` EXCLUDES cache reads and cache writes (the total input is ``input_tokens +
cache_creation_input_tokens + cache_read_input_tokens``); canonical `Usage.input_tokens` includes them.
In a stream, ``message_start`` carries the input counts and ``message_delta.usage`` is cumulative: each
field it carries replaces the earlier value, it is never added on top.

Cache writes by lifetime: ``cache_creation: {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}`` splits
``cache_creation_input_tokens``; without it every write is a 5-minute one (as Anthropic documents). The
processing tier is ``usage.service_tier``.
"""

from __future__ import annotations

import json
from typing import Any

from modelport.core.usage import Usage, as_count, as_optional_count, as_tier

_COUNT_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


def usage_from_wire(raw: Any) -> Usage | None:
    """Canonical usage from a Messages ``usage`` object; None when absent or not an object."""
    if not isinstance(raw, dict):
        return None
    cache_write = as_count(raw.get("cache_creation_input_tokens"))
    cache_read = as_count(raw.get("cache_read_input_tokens"))
    breakdown = raw.get("cache_creation")
    write_1h = 0
    if isinstance(breakdown, dict):
        write_1h = as_count(breakdown.get("ephemeral_1h_input_tokens"))
        # The total is the larger of the two sayings: a breakdown is never billed below its own sum.
        cache_write = max(cache_write, as_count(breakdown.get("ephemeral_5m_input_tokens")) + write_1h)
    details = raw.get("output_tokens_details")
    details = details if isinstance(details, dict) else {}
    return Usage(
        input_tokens=as_count(raw.get("input_tokens")) + cache_write + cache_read,
        output_tokens=as_count(raw.get("output_tokens")),
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        cache_write_1h_tokens=write_1h,
        reasoning_tokens=as_optional_count(details.get("thinking_tokens")),
        service_tier=as_tier(raw.get("service_tier")),
    )


def usage_to_wire(usage: Usage | None, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """A Messages ``usage`` object, key order as the API sends it, with the cache writes' breakdown by
    lifetime. `base` (the upstream's own object, same protocol) keeps fields we do not model
    (``inference_geo``, ...); the canonical counts always win."""
    usage = usage or Usage()
    out: dict[str, Any] = {
        "input_tokens": usage.uncached_input_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.cache_write_5m_tokens,
            "ephemeral_1h_input_tokens": usage.cache_write_1h_tokens,
        },
        "output_tokens": usage.output_tokens,
    }
    if base is not None and "cache_creation" not in base and not usage.cache_write_1h_tokens:
        del out["cache_creation"]  # a Messages answer without the breakdown is re-encoded as it came
    for key, value in (base or {}).items():
        out.setdefault(key, value)
    return out


def merge_wire_usage(current: dict[str, Any], update: Any) -> dict[str, Any]:
    """Fold a streamed ``usage`` object into the running one: present fields replace (cumulative counts)."""
    if not isinstance(update, dict):
        return current
    merged = dict(current)
    merged.update({k: v for k, v in update.items() if v is not None})
    return merged


def usage_from_body(body: dict[str, Any]) -> Usage | None:
    """Usage of a non-stream message body."""
    return usage_from_wire(body.get("usage"))


class MessagesUsageSniffer:
    """Fast path: follows ``message_start`` and ``message_delta`` usage of a relayed stream."""

    def __init__(self) -> None:
        self._wire: dict[str, Any] = {}
        self._seen = False

    @property
    def usage(self) -> Usage | None:
        return usage_from_wire(self._wire) if self._seen else None

    def feed(self, event: str | None, data: str) -> None:
        # Only two event types carry usage; skip the JSON parse for every delta.
        if '"usage"' not in data:
            return
        try:
            payload = json.loads(data)
        except ValueError:
            return
        if not isinstance(payload, dict):
            return
        if payload.get("type") == "message_start" and isinstance(payload.get("message"), dict):
            raw = payload["message"].get("usage")
        elif payload.get("type") == "message_delta":
            raw = payload.get("usage")
        else:
            return
        if isinstance(raw, dict):
            self._wire = merge_wire_usage(self._wire, raw)
            self._seen = True
