"""Upstream failures → the gateway's errors, in one place.

Nothing from the upstream reaches the client but a cleaned message: no upstream key (every configured
upstream secret is removed, `core.redaction`), no internal URL, no stack trace. Statuses worth another
deployment (429, 5xx, timeouts, connection errors) are `retryable`; the caller falls back and only
reports the last one if every deployment fails.
"""

from __future__ import annotations

from modelport.core.codec import UpstreamFault
from modelport.core.redaction import UPSTREAM_SECRETS
from modelport.errors import InvalidParameters, ModelUnavailable, ServiceError, UpstreamError

RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
_MAX_MESSAGE = 1000


def is_retryable(status: int) -> bool:
    """Worth another deployment. An upstream 404 means this deployment is misconfigured (a wrong model name
    or base URL), not that the client asked for something wrong: another deployment may well serve it."""
    return status in RETRYABLE_STATUSES or status >= 500 or status == 404


def _clean(value: str | None, limit: int) -> str | None:
    return UPSTREAM_SECRETS.scrub(value)[:limit] if value else value


def is_deployment_fault(status: int, fault: UpstreamFault | None) -> bool:
    """The upstream does not know the deployment's model (404, or what its protocol says instead, such as
    Responses' 400 `model_not_found`): the catalog is wrong, not the client's request."""
    return status == 404 or (status == 400 and fault is not None and fault.unknown_model)


def client_error_for(status: int, fault: UpstreamFault | None) -> ServiceError:
    """A non-retryable upstream error status, as the client should see it (`fault`: what the body said, read
    by the upstream's codec). The upstream's ``code`` (``context_length_exceeded``, ...) is kept: clients
    branch on it."""
    fault = fault or UpstreamFault()
    message = _clean(fault.message, _MAX_MESSAGE)
    if status in (400, 413, 422):
        # The request itself was refused (bad parameter, context too long...): the client can fix it.
        return InvalidParameters(
            message or "the upstream model rejected the request",
            param=_clean(fault.param, 200),
            code=_clean(fault.code, 200),
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
