"""The protocol POST routes, answered by one plain ASGI callable in front of FastAPI's middleware stack.

These routes take a raw request and do their own validation, so FastAPI's routing, dependency solving and
Starlette's middleware layers (error, telemetry, body limit, request id, NUL door: each a call and most a
`send` wrapper per message, per stream chunk too) only added CPU on the hottest path (bench/README.md).
`ProtocolEntry` does what those layers did for these routes itself: the request id (header and access
log), the NUL-byte refusal, errors in the route's protocol shape (`protocol_error`, the codec's
`error_body`). `routes.py` declares the same routes for the OpenAPI document, from `protocol_routes`.
"""

from __future__ import annotations

import logging
import time

from starlette.requests import ClientDisconnect, Request
from starlette.types import Receive, Scope, Send

from modelport.core.codec import ProtocolCodec
from modelport.errors import InternalError, ServiceError
from modelport.gateway.answer import BodyAnswer, StreamAnswer
from modelport.gateway.pipeline import TextGateway
from modelport.gateway.protocol_routes import BY_PATH
from modelport.web.door import has_nul, nul_refusal
from modelport.web.envelope import encode_json
from modelport.web.errors import count_refusal
from modelport.web.request_id import log_access, new_request_id

log = logging.getLogger("modelport.errors")
PROTOCOL_PATHS = frozenset(BY_PATH)


class ProtocolEntry:
    """The ASGI app of the text gateway's protocol POSTs (`BY_PATH`); `apps.factory.HostApp` sends them here."""

    def __init__(self, gateway: TextGateway) -> None:
        self.gateway = gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        codec = BY_PATH[scope["path"]]
        request_id = new_request_id()
        scope.setdefault("state", {})["request_id"] = request_id
        started = time.perf_counter()
        answer: BodyAnswer | StreamAnswer
        if has_nul(scope):
            answer = protocol_error(nul_refusal(), codec)
        else:
            try:
                answer = await self.gateway.handle(Request(scope, receive), codec)
            except ServiceError as exc:
                answer = protocol_error(exc, codec)
            except ClientDisconnect:
                answer = BodyAnswer(b"", status=499)
            except Exception:
                log.exception("unhandled error on POST %s", scope["path"])
                answer = protocol_error(InternalError(), codec)
        answer.raw_headers.append((b"x-request-id", request_id.encode("ascii")))
        try:
            await answer(scope, receive, send)
        finally:
            log_access("text", request_id, scope, answer.status_code, started)


def protocol_error(error: ServiceError, codec: ProtocolCodec) -> BodyAnswer:
    """An error in the shape of the route's protocol (Messages clients get Anthropic's; docs/api/errors.md)."""
    count_refusal(error, "text")
    body = codec.error_body(
        error.text_message, error.error_type, code=error.code, param=error.param, status=error.status
    )
    return BodyAnswer(encode_json(body), status=error.status, headers=error.headers or None)
