"""Pure ASGI middleware: a request id on every response (`X-Request-Id`) and one access-log line.

Pure ASGI rather than BaseHTTPMiddleware so streaming responses pass through untouched and cheaply.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from modelport.ids import unique_id

access_log = logging.getLogger("modelport.access")


def new_request_id() -> str:
    return unique_id("req")


class RequestIdMiddleware:
    def __init__(self, app: ASGIApp, *, host: str) -> None:
        self.app = app
        self.host = host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = new_request_id()
        state: dict[str, Any] = scope.setdefault("state", {})
        state["request_id"] = request_id
        header = (b"x-request-id", request_id.encode("ascii"))
        started = time.perf_counter()
        status = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), header]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            log_access(self.host, request_id, scope, status, started)


def log_access(host: str, request_id: str, scope: Scope, status: int, started: float) -> None:
    """The access-log line of one request (INFO; `started` from `time.perf_counter()`)."""
    if access_log.isEnabledFor(logging.INFO):
        access_log.info(
            "request",
            extra={
                "host_app": host,
                "request_id": request_id,
                "method": scope["method"],
                "path": scope["path"],
                "status": status,
                "ms": round((time.perf_counter() - started) * 1000, 2),
            },
        )
