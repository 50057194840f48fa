"""One text request's log row, as the gateway hands it to the writer.

Strings are clipped to their column widths here, and NUL characters replaced by U+FFFD, so one odd value
(a long tool session header, a huge error message, a NUL in a model id) can never make a whole batch fail
on PostgreSQL, which enforces `VARCHAR(n)` and rejects NUL in text.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any


class RequestStatus(StrEnum):
    """How a text request ended: the `status` of its log row, and the `outcome` of its metrics."""

    # The upstream answered and the whole answer reached the client.
    SUCCESS = "success"
    # Refused or failed: a 4xx/5xx answer, or an error event that ended a stream already under way.
    ERROR = "error"
    # The client went away before the answer was complete (billed for what the upstream did).
    CANCELLED = "cancelled"


MAX_ERROR_CHARS = 4096
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class LogRecord:
    """A `request_logs` row.

    `id` is the request id (the item's `task_id`); `created_at_ms` is UNIX milliseconds; `cost_micros` is
    integer micro-USD; `input`/`result` are JSON text already capped by `payloads.PayloadPolicy`, or
    None when the team does not retain payloads.
    """

    id: str
    team_id: str
    created_at_ms: int
    status: str  # a RequestStatus; the column takes any string up to 16 characters
    provider: str
    model_name: str
    endpoint: str
    error: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None  # cache reads
    cost_micros: int = 0
    svc_user_id: str | None = None
    session_id: str | None = None
    input: str | None = None
    result: str | None = None
    key_id: str | None = None  # the API key that made the request
    cache_write_tokens: int | None = None  # all cache writes
    cache_write_1h_tokens: int | None = None  # the 1-hour share of them
    price_tier: str | None = None  # the price table applied (`billing.rates.PriceTier`); None: nothing billed
    cache: str | None = None  # the response cache: hit | miss | skip; None: the team's cache is off
    cache_saved_micros: int | None = None  # a hit: the original cost less what the hit was billed
    previous_response_id: str | None = None  # Responses: the stored response this request followed
    conversation_id: str | None = None  # Responses: the conversation it continued
    served_model: str | None = None  # the fallback model that answered (None: the requested model did)

    def as_row(self) -> dict[str, Any]:
        # Field by field, written out: this runs once per text request (a loop over the fields with
        # `getattr` and type tests cost several times as much; asdict's deep copy more still).
        return {
            "id": _clip(self.id, 64),
            "team_id": _clip(self.team_id, 40),
            "created_at_ms": self.created_at_ms,
            "status": _clip(self.status, 16),
            "provider": _clip(self.provider, 100),
            "model_name": _clip(self.model_name, 200),
            "endpoint": _clip(self.endpoint, 32),
            "error": None if self.error is None else _clip(self.error, MAX_ERROR_CHARS),
            "prompt_tokens": _int32(self.prompt_tokens),
            "completion_tokens": _int32(self.completion_tokens),
            "cached_tokens": _int32(self.cached_tokens),
            "cost_micros": self.cost_micros,
            "svc_user_id": None if self.svc_user_id is None else _clip(self.svc_user_id, 128),
            "session_id": None if self.session_id is None else _clip(self.session_id, 128),
            "input": None if self.input is None else _no_nul(self.input),
            "result": None if self.result is None else _no_nul(self.result),
            "key_id": None if self.key_id is None else _clip(self.key_id, 40),
            "cache_write_tokens": _int32(self.cache_write_tokens),
            "cache_write_1h_tokens": _int32(self.cache_write_1h_tokens),
            "price_tier": None if self.price_tier is None else _clip(self.price_tier, 16),
            "cache": None if self.cache is None else _clip(self.cache, 8),
            "cache_saved_micros": self.cache_saved_micros,
            "previous_response_id": _clip_optional(self.previous_response_id, 200),
            "conversation_id": _clip_optional(self.conversation_id, 200),
            "served_model": None if self.served_model is None else _clip(self.served_model, 200),
        }

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> LogRecord:
        return cls(**row)


def _no_nul(value: str) -> str:
    return value.replace("\x00", "\ufffd") if "\x00" in value else value


def _clip(value: str, width: int) -> str:
    """NUL characters replaced, then cut to the column's width."""
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    return value[:width] if len(value) > width else value


def _clip_optional(value: str | None, width: int) -> str | None:
    return None if value is None else _clip(value, width)


def _int32(value: int | None) -> int | None:
    return None if value is None else max(0, min(int(value), _INT32_MAX))


_FIELDS = tuple(field.name for field in fields(LogRecord))
