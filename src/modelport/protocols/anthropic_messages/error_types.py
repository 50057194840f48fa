"""Anthropic's error types (a closed set its SDKs and clients key their retries on)."""

from __future__ import annotations

# Error *events* inside a Messages stream use them (`stream_error_type`); the gateway's own HTTP error answers
# on /v1/messages carry the interface's types instead (codec.error_body, docs/api/errors.md).
ANTHROPIC_ERROR_TYPES = frozenset(
    {
        "invalid_request_error",
        "authentication_error",
        "billing_error",
        "permission_error",
        "not_found_error",
        "request_too_large",
        "rate_limit_error",
        "timeout_error",
        "api_error",
        "overloaded_error",
    }
)
_RATE_LIMIT_TYPES = frozenset({"rate_limit_exceeded", "request_limited"})


def stream_error_type(type: str) -> str:
    """The Anthropic error type of an in-stream error event for the gateway's or another protocol's `type`:
    Anthropic's own types stay, rate limits become `rate_limit_error`, anything else `api_error`."""
    if type in ANTHROPIC_ERROR_TYPES:
        return type
    if type == "insufficient_quota":
        return "billing_error"
    return "rate_limit_error" if type in _RATE_LIMIT_TYPES else "api_error"
