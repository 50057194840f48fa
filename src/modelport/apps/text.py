"""The text gateway app (`/v1/...`)."""

from __future__ import annotations

from modelport.apps.assemble import build_services
from modelport.apps.factory import HostApp, base_app, finish_app
from modelport.gateway import background_responses, conversations, count_tokens, models_route, routes, stored_responses
from modelport.gateway.count_tokens import COUNT_PATHS
from modelport.gateway.dispatch import PROTOCOL_PATHS, ProtocolEntry
from modelport.gateway.pipeline import TEXT_GATEWAY
from modelport.requestlog import routes as log_routes
from modelport.services import Services
from modelport.settings import Settings, load_settings


def create_text_app(services: Services | None = None, settings: Settings | None = None) -> HostApp:
    services = services or build_services(settings or load_settings())
    app = base_app(services, host="text", title="modelport text gateway")
    app.include_router(models_route.router)
    app.include_router(routes.router)
    app.include_router(count_tokens.router)
    app.include_router(stored_responses.router)
    app.include_router(background_responses.router)
    app.include_router(conversations.router)
    app.include_router(log_routes.router)
    entry = ProtocolEntry(services[TEXT_GATEWAY])
    return finish_app(app, host="text", extra_errors=text_errors, front=entry, front_paths=PROTOCOL_PATHS)


def text_errors(method: str, path: str) -> tuple[int, ...]:
    """Errors beyond the common ones (see web/openapi.py), per operation of the text gateway."""
    if path in COUNT_PATHS:
        return (404, 413, 429, 502)
    if method == "POST":
        return (402, 404, 413, 429, 502)
    return (429,)
