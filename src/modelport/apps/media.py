"""The media host app (`/api/v1/...`, the admin API, public file downloads)."""

from __future__ import annotations

import html
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from modelport.apps import admin
from modelport.apps.deps import get_runtime
from modelport.apps.errors import install_error_handlers
from modelport.apps.request_id import RequestIdMiddleware
from modelport.errors import NotFound
from modelport.media import utility
from modelport.runtime import Runtime
from modelport.settings import Settings, load_settings


def create_media_app(runtime: Runtime | None = None, settings: Settings | None = None) -> FastAPI:
    runtime = runtime or Runtime(settings or load_settings())

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await runtime.open()
        try:
            yield
        finally:
            await runtime.close()

    app = FastAPI(
        title="modelport media host",
        version="1.0.0",
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json",
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    install_error_handlers(app, "media")
    app.include_router(utility.router)
    app.include_router(admin.router)
    _include_optional_routers(app, runtime)
    app.add_api_route("/docs/models/{slug:path}", model_docs_page, methods=["GET"], include_in_schema=False)
    app.add_middleware(RequestIdMiddleware, host="media")
    return app


def _include_optional_routers(app: FastAPI, runtime: Runtime) -> None:
    """Feature routers that install themselves (files, assets, tasks) as they are built."""
    from modelport.media import features

    for router, install in features.routers():
        app.include_router(router)
        if install is not None:
            install(runtime)


async def model_docs_page(request: Request, slug: str) -> Response:
    snapshot = await get_runtime(request).catalog.get()
    for model in snapshot.media:
        if model.slug == slug and model.active and model.published:
            body = (f"<!doctype html><title>{html.escape(model.slug)}</title>"
                    f"<h1>{html.escape(model.slug)}</h1><p>Type: {html.escape(model.type)}</p>"
                    f"<p>{html.escape(model.description)}</p>")
            return HTMLResponse(body)
    raise NotFound(f"no model {slug!r}")
