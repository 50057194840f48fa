"""The protocol endpoints of the text gateway, declared from `protocol_routes`. The work is in `pipeline`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from modelport.gateway.openapi_docs import request_body, success_response
from modelport.gateway.pipeline import TEXT_GATEWAY, TextGateway
from modelport.gateway.protocol_routes import PROTOCOL_ROUTES, ProtocolRoute
from modelport.web.deps import get_services

router = APIRouter(tags=["text"])

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"description": desc}
    for code, desc in {
        400: "Invalid parameters",
        401: "Missing or invalid key",
        402: "Insufficient balance",
        404: "Unknown model",
        429: "Rate limit, request limit or model temporarily unavailable",
        502: "Upstream error",
    }.items()
}


def _handler(route: ProtocolRoute) -> Callable[[Request], Awaitable[Response]]:
    async def handle(request: Request) -> Response:
        # Normally answered by the ASGI dispatch in front of the router; kept so the route is complete.
        gateway: TextGateway = get_services(request)[TEXT_GATEWAY]
        return await gateway.handle(request, route.endpoint, route.protocol)

    return handle


for _route in PROTOCOL_ROUTES:
    router.add_api_route(
        _route.path,
        _handler(_route),
        methods=["POST"],
        name=_route.name,
        summary=_route.summary,
        responses={**_ERRORS, 200: success_response(_route.path)},
        openapi_extra=request_body(_route.path),
    )
