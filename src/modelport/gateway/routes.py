"""The protocol endpoints of the text gateway, declared from `protocol_routes`. The work is in `pipeline`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from modelport.core.codec import ProtocolCodec
from modelport.gateway.openapi_docs import request_body, success_response
from modelport.gateway.pipeline import TEXT_GATEWAY, TextGateway
from modelport.gateway.protocol_routes import BY_PATH
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


def _handler(codec: ProtocolCodec) -> Callable[[Request], Awaitable[Response]]:
    async def handle(request: Request) -> Response:
        # Normally answered by the ASGI dispatch in front of the router; kept so the route is complete.
        gateway: TextGateway = get_services(request)[TEXT_GATEWAY]
        return await gateway.handle(request, codec)

    return handle


for _codec in BY_PATH.values():
    router.add_api_route(
        _codec.route.path,
        _handler(_codec),
        methods=["POST"],
        name=_codec.route.operation,
        summary=_codec.route.summary,
        responses={**_ERRORS, 200: success_response(_codec)},
        openapi_extra=request_body(_codec),
    )
