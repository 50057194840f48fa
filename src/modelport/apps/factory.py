"""What both hosts' app factories share: the FastAPI app, its lifespan over the services, errors, request ids."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from modelport.apps import health
from modelport.apps.health import HEALTH_PATHS
from modelport.services import Services
from modelport.web.body import BodyLimit
from modelport.web.door import RefuseNulBytes
from modelport.web.envelope import JSONBytesResponse
from modelport.web.errors import Host, install_error_handlers
from modelport.web.http_metrics import HttpMetrics
from modelport.web.http_tracing import HttpTracing
from modelport.web.openapi import install_openapi
from modelport.web.request_id import RequestIdMiddleware


class HostApp(FastAPI):
    """FastAPI with a front lane: POSTs to the `front_paths` go to `front`, a plain ASGI app, before
    Starlette's middleware stack and router (the text gateway's protocol routes: `gateway/dispatch.py`)."""

    front: ASGIApp | None = None
    front_paths: frozenset[str] = frozenset()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        front = self.front
        # front_paths is empty when there is no front; the path test comes first: the cheapest refusal.
        if scope.get("path") in self.front_paths and scope["type"] == "http" and scope["method"] == "POST" and front:
            scope["app"] = self
            await front(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def wants_html(request: Request) -> bool:
    """A browser asking for a page: `text/html` accepted, and ranked above JSON (curl's `*/*` is not)."""
    best: dict[str, float] = {}
    for part in request.headers.get("accept", "").split(","):
        kind, _, params = part.strip().partition(";")
        q = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        best[kind.strip().lower()] = max(q, best.get(kind.strip().lower(), 0.0))
    html = best.get("text/html", 0.0)
    return html > 0 and html >= best.get("application/json", 0.0)


def base_app(
    services: Services,
    *,
    host: Host,
    title: str,
    browser_home: str | None = None,
) -> HostApp:
    """A FastAPI app for one host. Add routes, then call `finish_app`.

    `browser_home`: where `GET /` sends a browser (303); API clients keep the JSON answer."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await services.start()
        try:
            yield
        finally:
            await services.aclose()

    app = HostApp(
        title=title,
        version="1.0.0",
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
        lifespan=lifespan,
        # FastAPI's own OpenTelemetry hooks (0.16x) look up three global providers on every request (~2% of
        # the gateway's CPU); tracing is ours (`tracing.py`, its own provider) and metrics are Prometheus.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.services = services
    install_error_handlers(app, host)
    app.include_router(health.router)

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def root(request: Request) -> Response:
        # Clients probe the base URL before their first call (Claude Code sends `HEAD /`): no auth needed.
        if browser_home is None:
            return JSONBytesResponse({"object": "service", "name": title, "status": "ok"})
        answer: Response = (
            RedirectResponse(browser_home, status_code=303)
            if wants_html(request)
            else JSONBytesResponse({"object": "service", "name": title, "status": "ok"})
        )
        answer.headers["vary"] = "Accept"  # one URL, two answers: caches must key on Accept
        return answer

    return app


def finish_app(
    app: HostApp,
    *,
    host: Host,
    public: frozenset[str] = frozenset(),
    extra_errors: Callable[[str, str], tuple[int, ...]] = lambda _method, _path: (),
    front: ASGIApp | None = None,
    front_paths: frozenset[str] = frozenset(),
) -> HostApp:
    """`front`: the ASGI app answering POSTs to `front_paths` ahead of the stack (their own route label in
    the metrics; metrics and tracing wrap it as they wrap the stack)."""
    install_openapi(app, host, public=public | HEALTH_PATHS, extra_errors=extra_errors)
    app.add_middleware(BodyLimit, host=host)  # innermost: its 413 still gets the request id
    app.add_middleware(RefuseNulBytes, host=host)
    app.add_middleware(RequestIdMiddleware, host=host)
    services: Services = app.state.services
    if services.settings.tracing.enabled:
        app.add_middleware(HttpTracing, host=host, fixed=front_paths)
        front = HttpTracing(front, host=host, fixed=front_paths) if front is not None else None
    if services.settings.metrics_port is not None:
        app.add_middleware(HttpMetrics, host=host, fixed=front_paths)  # outermost: times everything
        front = HttpMetrics(front, host=host, fixed=front_paths) if front is not None else None
    app.front = front
    app.front_paths = front_paths if front is not None else frozenset()
    return app
