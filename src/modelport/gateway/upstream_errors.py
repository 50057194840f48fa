"""Upstream failures → the gateway's errors, in one place.

Nothing from the upstream reaches the client but a cleaned message: no upstream key (every configured
upstream secret is removed, `core.redaction`), no internal URL, no stack trace. Statuses worth another
deployment (429, 5xx, timeouts, connection errors) are `retryable`; the caller falls back and only
reports the last one if every deployment fails.
"""

from __future__ import annotations

from typing import Any

import orjson

from modelport.core.redaction import UPSTREAM_SECRETS
from modelport.errors import InvalidParameters, ModelUnavailable, ServiceError, UpstreamError

RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
_MAX_MESSAGE = 1000


def is_retryable(status: int) -> bool:
    """Worth another deployment. An upstream 404 means this deployment is misconfigured (a wrong model name
    or base URL), not that the client asked for something wrong: another deployment may well serve it."""
    return status in RETRYABLE_STATUSES or status >= 500 or status == 404


def upstream_message(body: bytes) -> str | None:
    """The human message inside an upstream error body (OpenAI or Anthropic shape), if any."""
    try:
        parsed: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return UPSTREAM_SECRETS.scrub(str(error["message"]))[:_MAX_MESSAGE]
        if isinstance(error, str):
            return UPSTREAM_SECRETS.scrub(error)[:_MAX_MESSAGE]
    return None


def is_deployment_fault(status: int, body: bytes) -> bool:
    """The upstream does not know the deployment's model (404, or Responses' 400 `model_not_found`):
    the catalog is wrong, not the client's request."""
    if status == 404:
        return True
    if status != 400:
        return False
    try:
        parsed: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return isinstance(error, dict) and error.get("code") == "model_not_found"


def _upstream_field(body: bytes, key: str) -> str | None:
    try:
        parsed: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    value = error.get(key) if isinstance(error, dict) else None
    return UPSTREAM_SECRETS.scrub(value)[:200] if isinstance(value, str) and value else None


def upstream_param(body: bytes) -> str | None:
    return _upstream_field(body, "param")


def upstream_code(body: bytes) -> str | None:
    """The upstream's machine-readable ``code`` (``context_length_exceeded``, ``invalid_function_parameters``,
    ...): clients branch on it, so it is kept."""
    return _upstream_field(body, "code")


def client_error_for(status: int, body: bytes) -> ServiceError:
    """A non-retryable upstream error status, as the client should see it."""
    message = upstream_message(body)
    if status in (400, 413, 422):
        # The request itself was refused (bad parameter, context too long...): the client can fix it.
        return InvalidParameters(
            message or "the upstream model rejected the request", param=upstream_param(body), code=upstream_code(body)
        )
    if status in (401, 403):
        return UpstreamError("the upstream refused the gateway credentials (check the deployment key)", status=502)
    return UpstreamError(message or f"upstream answered HTTP {status}", status=502)


def exhausted_error(last_status: int | None, retry_after: int) -> ServiceError:
    """Every deployment failed with a retryable error."""
    if last_status == 429:
        return ModelUnavailable(
            "the model is temporarily unavailable (upstream rate limit); retry later or switch model",
            headers={"Retry-After": str(retry_after)},
        )
    if last_status is None:
        return UpstreamError("could not reach the model's upstream", status=502)
    status = 504 if last_status in (408, 504) else 502
    return UpstreamError("the model's upstream failed; retry later", status=status)
