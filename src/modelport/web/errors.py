"""Exception handlers: every failure leaves in its host's error shape, never as a stack trace."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Literal

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from modelport.errors import (
    InsufficientQuota,
    InternalError,
    InvalidParameters,
    ModelUnavailable,
    NotFound,
    RateLimited,
    RequestLimited,
    ServiceError,
)
from modelport.metrics import REFUSALS
from modelport.protocols import error_body_for_path
from modelport.web.envelope import JSONBytesResponse

Host = Literal["media", "text"]
log = logging.getLogger("modelport.errors")


_REFUSAL_KINDS: dict[type[ServiceError], str] = {
    InsufficientQuota: "balance",
    RateLimited: "rate_limit",
    RequestLimited: "request_limit",
    ModelUnavailable: "model_unavailable",
}


def refusal_kind(error: ServiceError) -> str:
    """The bounded `kind` label of a 402/429: one per error class."""
    for cls in type(error).__mro__:
        if cls in _REFUSAL_KINDS:
            return _REFUSAL_KINDS[cls]
    return "other"


def count_refusal(error: ServiceError, host: Host) -> None:
    """Every error answer passes here (or `render_error`): 402s and 429s are counted by kind."""
    if error.status in (402, 429):
        REFUSALS.labels(host, refusal_kind(error)).inc()


def error_body(error: ServiceError, host: Host, path: str = "") -> dict[str, Any]:
    """The host's error body: the media envelope, or on the text host the shape of the protocol whose route
    `path` is (OpenAI's elsewhere; `protocols.error_body_for_path`)."""
    return error.media_body() if host == "media" else error_body_for_path(path, error)


def render_error(error: ServiceError, host: Host, *, path: str = "") -> Response:
    count_refusal(error, host)
    body = error_body(error, host, path)
    return JSONBytesResponse(body, status_code=error.status, headers=error.headers or None)


def _describe_validation(exc: RequestValidationError) -> tuple[str, str | None]:
    first = exc.errors()[0] if exc.errors() else {}
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path", "header")]
    param = ".".join(loc) or None
    msg = str(first.get("msg", "invalid request"))
    return (f"{param}: {msg}" if param else msg), param


def install_error_handlers(app: FastAPI, host: Host) -> None:
    def render(request: Request, error: ServiceError) -> Response:
        return render_error(error, host, path=request.url.path)

    async def on_service_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ServiceError)
        return render(request, exc)

    async def on_validation_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        detail, param = _describe_validation(exc)
        return render(request, InvalidParameters(detail, param=param))

    async def on_http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            error: ServiceError = NotFound(f"no route {request.method} {request.url.path}")
        elif exc.status_code == 405:
            error = _MethodNotAllowed(f"{request.method} is not allowed on {request.url.path}")
        elif exc.status_code < 500:
            error = InvalidParameters(str(exc.detail))
            error.status = exc.status_code
        else:
            error = InternalError()
        return render(request, error)

    async def on_client_gone(_request: Request, _exc: Exception) -> Response:
        # The client hung up: nobody will read this response, and it is not a server error.
        return Response(status_code=499)

    async def on_unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return render(request, InternalError())

    handlers: dict[type[Exception], Callable[..., object]] = {
        ServiceError: on_service_error,
        RequestValidationError: on_validation_error,
        HTTPException: on_http_error,
        ClientDisconnect: on_client_gone,
        Exception: on_unexpected,
    }
    for exc_type, handler in handlers.items():
        app.add_exception_handler(exc_type, handler)  # type: ignore[arg-type]


class _MethodNotAllowed(ServiceError):
    status = 405
    category = "Method not allowed"
    error_type = "invalid_request_error"
