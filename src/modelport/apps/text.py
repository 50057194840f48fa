"""The text gateway app (`/v1/...`)."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI

from modelport.apps.errors import install_error_handlers
from modelport.apps.request_id import RequestIdMiddleware
from modelport.gateway import models_route
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
    for router in _gateway_routers():
        app.include_router(router)
    app.add_middleware(RequestIdMiddleware, host="text")
    return app


def _gateway_routers() -> list[APIRouter]:
    """The protocol routes, once the gateway pipeline module exists."""
    try:
        module = importlib.import_module("modelport.gateway.routes")
    except ModuleNotFoundError as exc:
        if exc.name != "modelport.gateway.routes":
            raise
        return []
    router: APIRouter = module.router
    return [router]
