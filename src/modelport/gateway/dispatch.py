"""The three protocol POST routes, served straight from an ASGI layer in front of FastAPI's router.

These routes take a raw request and do their own validation, so FastAPI's routing, dependency solving and
exception middleware only add per-request CPU on the hottest path (measured: bench/). The same routes stay
declared in `routes.py` for the OpenAPI document; this layer answers them first. Errors are rendered exactly
as the app's exception handlers render them.
"""

from __future__ import annotations

import logging

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from modelport.apps.errors import render_error
from modelport.errors import InternalError, ServiceError
from modelport.gateway.pipeline import TextGateway

log = logging.getLogger("modelport.errors")

PROTOCOL_ROUTES = {
    "/v1/chat/completions": ("chat.completions", "openai_chat"),
    "/v1/responses": ("responses", "openai_responses"),
    "/v1/messages": ("messages", "anthropic_messages"),
}


class ProtocolDispatch:
    def __init__(self, app: ASGIApp, *, gateway: TextGateway) -> None:
        self.app = app
        self.gateway = gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = PROTOCOL_ROUTES.get(scope["path"]) if scope["type"] == "http" else None
        if route is None or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            response = await self.gateway.handle(request, *route)
        except ServiceError as exc:
            response = render_error(exc, "text")
        except ClientDisconnect:
            response = Response(status_code=499)
        except Exception:
            log.exception("unhandled error on POST %s", scope["path"])
            response = render_error(InternalError(), "text")
        await response(scope, receive, send)
