"""A server span per HTTP request (pure ASGI; installed only when tracing is on).

The span continues the client's W3C `traceparent` when one came, is current while the app runs (so the
gateway's spans are its children), and is named `METHOD route-template` once the route is known.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from modelport import tracing
from modelport.web.errors import Host
from modelport.web.http_metrics import RouteLabel


class HttpTracing:
    def __init__(self, app: ASGIApp, *, host: Host, fixed: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.host = host
        self._route = RouteLabel(fixed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not tracing.on():
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        span = tracing.start(
            method,
            {"http.request.method": method, "url.path": scope["path"], "modelport.host": self.host},
            parent=tracing.extract(scope["headers"]),
            kind="SERVER",
        )
        token = tracing.attach(span)
        status = 500  # an exception before the response started ends as a 500 from the error handler

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            tracing.detach(token)
            route = self._route(scope)
            span.update_name(f"{method} {route}")
            tracing.end(
                span,
                {"http.route": route, "http.response.status_code": status},
                error=f"HTTP {status}" if status >= 500 else None,
            )
