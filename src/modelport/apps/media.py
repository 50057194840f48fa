"""The media host app (`/api/v1/...`, the admin API, public file downloads)."""

from __future__ import annotations

import html

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from modelport.apps import admin
from modelport.apps.deps import get_runtime
from modelport.apps.factory import base_app, finish_app
from modelport.errors import NotFound
from modelport.media import utility
from modelport.runtime import Runtime
from modelport.settings import Settings, load_settings


def create_media_app(runtime: Runtime | None = None, settings: Settings | None = None) -> FastAPI:
    runtime = runtime or Runtime(settings or load_settings())
    app = base_app(runtime, host="media", title="modelport media host")
    app.include_router(utility.router)
    app.include_router(admin.router)
    _include_optional_routers(app, runtime)
    app.add_api_route("/docs/models/{slug:path}", model_docs_page, methods=["GET"], include_in_schema=False)
    return finish_app(app, host="media")


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
            body = (
                f"<!doctype html><title>{html.escape(model.slug)}</title>"
                f"<h1>{html.escape(model.slug)}</h1><p>Type: {html.escape(model.type)}</p>"
                f"<p>{html.escape(model.description)}</p>"
            )
            return HTMLResponse(body)
    raise NotFound(f"no model {slug!r}")
