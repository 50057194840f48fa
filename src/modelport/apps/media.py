"""The media host app (`/api/v1/...`, the operator API `/admin/v1/...`, public file downloads)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from modelport.apps import operator_api, people_api
from modelport.apps.assemble import build_services
from modelport.apps.factory import base_app, finish_app
from modelport.apps.text import create_text_app
from modelport.console.app import mount_console
from modelport.console.operator import ROUTERS as OPERATOR_ROUTERS
from modelport.errors import NotFound
from modelport.media import utility
from modelport.media import webhooks_api as webhook_routes
from modelport.media.assets import routes as asset_routes
from modelport.media.files import routes as file_routes
from modelport.media.model_docs import render_page
from modelport.media.reference.routes import page_headers, reference_router
from modelport.media.tasks import routes as task_routes
from modelport.scim.app import PREFIX as SCIM_PREFIX
from modelport.scim.app import create_scim_app
from modelport.services import Services
from modelport.settings import Settings, load_settings
from modelport.team_admin import audit, cache, keys, members, notifications
from modelport.web.deps import get_services


def create_media_app(services: Services | None = None, settings: Settings | None = None) -> FastAPI:
    services = services or build_services(settings or load_settings())
    # A browser opening the media host's URL lands in the console; API clients keep the JSON answer.
    app = base_app(services, host="media", title="modelport media host", browser_home="/console/")
    mount_console(
        app, services, OPERATOR_ROUTERS
    )  # before the tasks' `/{provider}/{model}` routes, which would take /console/x
    app.include_router(reference_router(_text_document(services)))  # /docs, likewise
    scim_token = services.settings.scim.token()
    if scim_token is not None:  # SCIM off: no /scim path exists (404)
        app.mount(SCIM_PREFIX, create_scim_app(services, scim_token))
    # Tasks last: their `POST /{provider}/{model}` must not shadow the fixed routes before them.
    for router in (
        utility.router,
        keys.router,
        operator_api.router,
        people_api.router,
        members.router,
        audit.operator_router,
        audit.team_router,
        notifications.router,
        cache.router,
        file_routes.router,
        asset_routes.router,
        webhook_routes.router,
        task_routes.router,
    ):
        app.include_router(router)
    app.add_api_route("/docs/models/{slug:path}", model_docs_page, methods=["GET"], include_in_schema=False)
    return finish_app(app, host="media", extra_errors=media_errors)


def _text_document(services: Services) -> Callable[[], dict[str, Any]]:
    """The text gateway's OpenAPI document for `/docs`, built once, on first use, from its own app factory."""
    built: list[dict[str, Any]] = []

    def document() -> dict[str, Any]:
        if not built:
            built.append(create_text_app(services).openapi())
        return built[0]

    return document


def media_errors(method: str, path: str) -> tuple[int, ...]:
    """Errors beyond the common ones (see web/openapi.py), per operation of the media host."""
    if path.startswith("/admin/"):
        return (409, 429) if method == "POST" else (429,)  # 429: too many failed admin-token attempts
    # 409: an Idempotency-Key reused for a different request (media/idempotency.py)
    if path == "/api/v1/media/files" and method == "POST":
        return (409, 413)
    if path.startswith("/api/v1/media/providers/"):
        return (402, 409, 413, 429) if method == "POST" else (429,)
    if path.startswith("/{provider}/{model}"):
        return (402, 409, 413, 429)
    if path == "/api/v1/tasks/{task_id}/cancel":
        return (409,)
    if path.startswith(("/api/v1/keys", "/api/v1/notifications", "/api/v1/team/members", "/api/v1/team/invitations")):
        return (403,)
    if path in ("/api/v1/audit", "/api/v1/cache"):
        return (403,)
    return ()


async def model_docs_page(request: Request, slug: str) -> Response:
    model = (await get_services(request).catalog.get()).media.get(slug)
    if model is None or not model.active or not model.published:
        raise NotFound(f"no model {slug!r}")
    settings = get_services(request).settings
    return HTMLResponse(render_page(model, settings.effective_public_media_url), headers=page_headers(settings))
