"""The text gateway app (`/v1/...`)."""

from __future__ import annotations

from fastapi import FastAPI

from modelport.apps.factory import base_app, finish_app
from modelport.gateway import models_route, routes
from modelport.gateway.assembly import build_gateway
from modelport.gateway.dispatch import ProtocolDispatch
from modelport.requestlog import routes as log_routes
from modelport.runtime import Runtime
from modelport.settings import Settings, load_settings


def create_text_app(runtime: Runtime | None = None, settings: Settings | None = None) -> FastAPI:
    runtime = runtime or Runtime(settings or load_settings())
    app = base_app(runtime, host="text", title="modelport text gateway")
    app.include_router(models_route.router)
    app.include_router(routes.router)
    app.include_router(log_routes.router)
    app.state.gateway = gateway = build_gateway(runtime)
    # Inside the request-id middleware (added by finish_app, outermost), in front of the router.
    app.add_middleware(ProtocolDispatch, gateway=gateway)
    return finish_app(app, host="text")
