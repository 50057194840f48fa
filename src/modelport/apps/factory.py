"""What both hosts' app factories share: the FastAPI app, its lifespan over the services, errors, request ids."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI

from modelport.apps import health
from modelport.apps.health import HEALTH_PATHS
from modelport.services import Services
from modelport.web.door import RefuseNulBytes
from modelport.web.envelope import JSONBytesResponse
from modelport.web.errors import ErrorShape, Host, install_error_handlers
from modelport.web.http_metrics import HttpMetrics
from modelport.web.openapi import install_openapi
from modelport.web.request_id import RequestIdMiddleware


def base_app(services: Services, *, host: Host, title: str, error_shape: ErrorShape | None = None) -> FastAPI:
    """A FastAPI app for one host. Add routes, then call `finish_app`."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await services.start()
        try:
            yield
        finally:
            await services.aclose()

    app = FastAPI(
        title=title, version="1.0.0", docs_url=None, redoc_url=None, openapi_url="/openapi.json", lifespan=lifespan
    )
    app.state.services = services
    install_error_handlers(app, host, error_shape)
    app.include_router(health.router)

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def root() -> JSONBytesResponse:
        # Clients probe the base URL before their first call (Claude Code sends `HEAD /`): no auth needed.
        return JSONBytesResponse({"object": "service", "name": title, "status": "ok"})

    return app


def finish_app(
    app: FastAPI,
    *,
    host: Host,
    public: frozenset[str] = frozenset(),
    extra_errors: Callable[[str, str], tuple[int, ...]] = lambda _method, _path: (),
    fixed_routes: frozenset[str] = frozenset(),
) -> FastAPI:
    """`fixed_routes`: paths answered in front of the router (their own route label in the metrics)."""
    install_openapi(app, host, public=public | HEALTH_PATHS, extra_errors=extra_errors)
    app.add_middleware(RefuseNulBytes, host=host)
    app.add_middleware(RequestIdMiddleware, host=host)
    services: Services = app.state.services
    if services.settings.metrics_port is not None:
        app.add_middleware(HttpMetrics, host=host, fixed=fixed_routes)  # outermost: times everything
    return app
