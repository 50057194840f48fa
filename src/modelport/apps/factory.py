"""What both hosts' app factories share: the FastAPI app, its lifespan over the Runtime, errors, request ids."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from modelport.apps.errors import Host, install_error_handlers
from modelport.apps.request_id import RequestIdMiddleware
from modelport.runtime import Runtime


def base_app(runtime: Runtime, *, host: Host, title: str) -> FastAPI:
    """A FastAPI app for one host. Add routes, then call `finish_app`."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await runtime.open()
        try:
            yield
        finally:
            await runtime.close()

    app = FastAPI(
        title=title, version="1.0.0", docs_url=None, redoc_url=None, openapi_url="/openapi.json", lifespan=lifespan
    )
    app.state.runtime = runtime
    install_error_handlers(app, host)
    return app


def finish_app(app: FastAPI, *, host: Host) -> FastAPI:
    app.add_middleware(RequestIdMiddleware, host=host)
    return app
