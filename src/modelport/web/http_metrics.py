"""Counts every HTTP request per host, route template, method and status, and times it (pure ASGI).

The route label is the matched route's template (`/api/v1/tasks/{task_id}`), a path answered before the
router (`fixed`: the text gateway's protocol routes), or `unmatched`: never the raw path, so a scan of
random URLs cannot grow the label set.
"""

from __future__ import annotations

import time

from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from modelport.metrics import HTTP_DURATION, HTTP_REQUESTS
from modelport.web.errors import Host

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RouteLabel:
    """The route template a request matched (after the app ran), for metric labels and span names."""

    def __init__(self, fixed: frozenset[str] = frozenset()) -> None:
        self.fixed = fixed
        self._by_endpoint: dict[object, str] | None = None

    def __call__(self, scope: Scope) -> str:
        route = scope.get("route")
        path = getattr(route, "path", None)
        if isinstance(path, str):
            return path
        if scope["path"] in self.fixed:
            return str(scope["path"])
        # Plain Starlette routes (`/openapi.json`) leave only their endpoint in the scope.
        endpoint = scope.get("endpoint")
        if endpoint is not None:
            if self._by_endpoint is None:
                routes = getattr(scope.get("app"), "routes", [])
                self._by_endpoint = {r.endpoint: r.path for r in routes if isinstance(r, Route)}
            found = self._by_endpoint.get(endpoint)
            if found is not None:
                return found
        return "unmatched"


class HttpMetrics:
    def __init__(self, app: ASGIApp, *, host: Host, fixed: frozenset[str] = frozenset()) -> None:
        self.app = app
        self.host = host
        self._route = RouteLabel(fixed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # an exception before the response started ends as a 500 from the error handler

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = self._route(scope)
            method = scope["method"] if scope["method"] in _METHODS else "other"
            code = str(status)
            HTTP_REQUESTS.labels(self.host, route, method, code).inc()
            HTTP_DURATION.labels(self.host, route, code).observe(time.perf_counter() - started)
