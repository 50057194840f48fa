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
_WIDTHS = {
    "id": 64,
    "team_id": 40,
    "status": 16,
    "provider": 100,
    "model_name": 200,
    "endpoint": 32,
    "svc_user_id": 128,
    "session_id": 128,
    "key_id": 40,
    "error": MAX_ERROR_CHARS,
}


@dataclass(frozen=True, slots=True)
class LogRecord:
    """A `request_logs` row.

    `id` is the request id (the item's `task_id`); `created_at_ms` is UNIX milliseconds; `cost_micros` is
    integer micro-USD; `input`/`result` are JSON text already capped by `retention.RetentionPolicy`, or
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
    cached_tokens: int | None = None
    cost_micros: int = 0
    svc_user_id: str | None = None
    session_id: str | None = None
    input: str | None = None
    result: str | None = None
    key_id: str | None = None  # the API key that made the request

    def as_row(self) -> dict[str, Any]:
        # One pass, field by field (asdict's deep copy and three passes over the row cost ~20 us a row).
        row: dict[str, Any] = {}
        for name in _FIELDS:
            value = getattr(self, name)
            if isinstance(value, str):
                if "\x00" in value:
                    value = value.replace("\x00", "\ufffd")
                width = _WIDTHS.get(name)
                if width is not None and len(value) > width:
                    value = value[:width]
            elif value is not None and name in _TOKEN_FIELDS:
                value = max(0, min(int(value), _INT32_MAX))
            row[name] = value
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> LogRecord:
        return cls(**row)


_FIELDS = tuple(field.name for field in fields(LogRecord))
_TOKEN_FIELDS = frozenset({"prompt_tokens", "completion_tokens", "cached_tokens"})
