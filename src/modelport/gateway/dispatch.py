"""The protocol POST routes, served straight from an ASGI layer in front of FastAPI's router.

These routes take a raw request and do their own validation, so FastAPI's routing, dependency solving and
exception middleware only add per-request CPU on the hottest path (measured: bench/). This layer and
`routes.py` (the OpenAPI document) both take the routes from `protocol_routes`; this layer answers them
first. Errors are rendered in the route's protocol shape (`protocol_error`, the codec's `error_body`).
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from modelport.core.codec import ProtocolName
from modelport.errors import InternalError, ServiceError
from modelport.gateway.pipeline import TextGateway
from modelport.gateway.protocol_routes import BY_PATH
from modelport.protocols import get_codec
from modelport.web.envelope import JSONBytesResponse
from modelport.web.errors import count_refusal

log = logging.getLogger("modelport.errors")


class ProtocolDispatch:
    def __init__(self, app: ASGIApp, *, gateway: TextGateway) -> None:
        self.app = app
        self.gateway = gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = BY_PATH.get(scope["path"]) if scope["type"] == "http" else None
        if route is None or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            response = await self.gateway.handle(request, route.endpoint, route.protocol)
        except ServiceError as exc:
            response = protocol_error(exc, route.protocol)
        except ClientDisconnect:
            response = Response(status_code=499)
        except Exception:
            log.exception("unhandled error on POST %s", scope["path"])
            response = protocol_error(InternalError(), route.protocol)
        await response(scope, receive, send)


def protocol_error(error: ServiceError, protocol: str) -> Response:
    """An error in the shape of the route's protocol (Messages clients get Anthropic's; docs/api/errors.md)."""
    count_refusal(error, "text")
    body = get_codec(protocol).error_body(
        error.text_message, error.error_type, code=error.code, param=error.param, status=error.status
    )
    return JSONBytesResponse(body, status_code=error.status, headers=error.headers or None)


def messages_error_shape(path: str, error: ServiceError) -> dict[str, Any] | None:
    """Errors of the other `/v1/messages...` routes (``count_tokens``) in Anthropic's shape, like the route."""
    if not path.startswith("/v1/messages"):
        return None
    return get_codec(ProtocolName.ANTHROPIC_MESSAGES).error_body(
        error.text_message, error.error_type, code=error.code, param=error.param, status=error.status
    )
