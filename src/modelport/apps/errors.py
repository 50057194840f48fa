"""Exception handlers: every failure leaves in its host's error shape, never as a stack trace."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from modelport.apps.envelope import JSONBytesResponse
from modelport.errors import InternalError, InvalidParameters, NotFound, ServiceError

Host = Literal["media", "text"]
log = logging.getLogger("modelport.errors")


def render_error(error: ServiceError, host: Host) -> Response:
    body = error.media_body() if host == "media" else error.text_body()
    return JSONBytesResponse(body, status_code=error.status, headers=error.headers or None)


def _describe_validation(exc: RequestValidationError) -> tuple[str, str | None]:
    first = exc.errors()[0] if exc.errors() else {}
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path", "header")]
    param = ".".join(loc) or None
    msg = str(first.get("msg", "invalid request"))
    return (f"{param}: {msg}" if param else msg), param


def install_error_handlers(app: FastAPI, host: Host) -> None:
    async def on_service_error(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ServiceError)
        return render_error(exc, host)

    async def on_validation_error(_request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        detail, param = _describe_validation(exc)
        return render_error(InvalidParameters(detail, param=param), host)

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
        return render_error(error, host)

    async def on_client_gone(_request: Request, _exc: Exception) -> Response:
        # The client hung up: nobody will read this response, and it is not a server error.
        return Response(status_code=499)

    async def on_unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return render_error(InternalError(), host)

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
