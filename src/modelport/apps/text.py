"""The text gateway app (`/v1/...`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from modelport.apps.errors import install_error_handlers
from modelport.apps.request_id import RequestIdMiddleware
from modelport.gateway import models_route, routes
from modelport.gateway.assembly import build_gateway
from modelport.requestlog import routes as log_routes
from modelport.runtime import Runtime
from modelport.settings import Settings, load_settings


def create_text_app(runtime: Runtime | None = None, settings: Settings | None = None) -> FastAPI:
    runtime = runtime or Runtime(settings or load_settings())

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await runtime.open()
        try:
            yield
        finally:
            await runtime.close()

    app = FastAPI(
        title="modelport text gateway",
        version="1.0.0",
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    install_error_handlers(app, "text")
    app.include_router(models_route.router)
    app.include_router(routes.router)
    app.include_router(log_routes.router)
    app.state.gateway = build_gateway(runtime)
    app.add_middleware(RequestIdMiddleware, host="text")
    return app

