"""The one error tree of the service.

Every error a client can see is a `ServiceError`. It knows its HTTP status and renders itself in the
error shape of either host:

- media host: ``{"code": <status>, "message": "Category: detail"}``
- text gateway: the shape of the route's protocol (``modelport.protocols``), from `text_message`,
  `error_type`, `code` and `param`

Raise the most specific subclass; the app's exception handlers do the rendering, so route code never
builds error bodies by hand.
"""

from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    """Base of every client-visible error."""

    status: int = 500
    category: str = "Internal server error"
    error_type: str = "api_error"

    def __init__(
        self,
        detail: str = "",
        *,
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail or self.category)
        self.detail = detail
        self.code = code
        self.param = param
        self.headers = headers or {}

    @property
    def media_message(self) -> str:
        return f"{self.category}: {self.detail}" if self.detail else self.category

    @property
    def text_message(self) -> str:
        return self.detail or self.category

    def media_body(self) -> dict[str, Any]:
        return {"code": self.status, "message": self.media_message}


class InvalidParameters(ServiceError):
    """400: malformed JSON, a bad field, a bad query parameter."""

    status = 400
    category = "Invalid parameters"
    error_type = "invalid_request_error"


class MissingParameter(InvalidParameters):
    category = "Missing required parameter"


class InvalidFormat(InvalidParameters):
    category = "Invalid format"


class AuthenticationFailed(ServiceError):
    status = 401
    category = "Authentication failed"
    error_type = "invalid_request_error"


class InsufficientQuota(ServiceError):
    status = 402
    category = "Insufficient balance"
    error_type = "insufficient_quota"


class Forbidden(ServiceError):
    """403: the key is valid but may not do this (a member key managing keys, a key granting more than it has)."""

    status = 403
    category = "Forbidden"
    error_type = "permission_error"


class NotFound(ServiceError):
    status = 404
    category = "Not found"
    error_type = "invalid_request_error"


class Conflict(ServiceError):
    status = 409
    category = "Conflict"
    error_type = "invalid_request_error"


class Gone(ServiceError):
    """410: a setup, reset or invitation link that was used, revoked or has expired."""

    status = 410
    category = "Gone"
    error_type = "invalid_request_error"


class PayloadTooLarge(ServiceError):
    """413: a body over its cap. The answer closes the connection: the rest of the body is never read."""

    status = 413
    category = "Payload too large"
    error_type = "invalid_request_error"

    def __init__(self, detail: str = "", **kwargs: Any) -> None:
        super().__init__(detail, **kwargs)
        self.headers = {"Connection": "close", **self.headers}


class QuotaExceeded(ServiceError):
    """A per-team storage quota (bytes or file count) would be exceeded."""

    status = 413
    category = "Quota exceeded"
    error_type = "invalid_request_error"


class RangeNotSatisfiable(ServiceError):
    """416: a download's `Range` starts past the end of the file (carries `Content-Range: bytes */size`)."""

    status = 416
    category = "Range not satisfiable"
    error_type = "invalid_request_error"


class RateLimited(ServiceError):
    """429 rate_limit_exceeded: an RPM window is full."""

    status = 429
    category = "Rate limit exceeded"
    error_type = "rate_limit_exceeded"


class RequestLimited(ServiceError):
    """429 request_limited: another request limit (e.g. concurrency) is reached."""

    status = 429
    category = "Request limited"
    error_type = "request_limited"


class ModelUnavailable(ServiceError):
    """429 api_error: no deployment of the model can take the request right now."""

    status = 429
    category = "Model temporarily unavailable"
    error_type = "api_error"


class UpstreamError(ServiceError):
    """5xx api_error: the upstream failed in a way the client may retry."""

    status = 502
    category = "Upstream error"
    error_type = "api_error"

    def __init__(self, detail: str = "", *, status: int = 502, **kwargs: Any) -> None:
        super().__init__(detail, **kwargs)
        self.status = status


class ServiceUnavailable(ServiceError):
    status = 503
    category = "Service unavailable"
    error_type = "api_error"


class InternalError(ServiceError):
    """500 with no detail: the cause is logged, never shown."""

    status = 500
    category = "Internal server error"
    error_type = "api_error"

    @property
    def media_message(self) -> str:
        return self.category

    @property
    def text_message(self) -> str:
        return "Internal server error"
