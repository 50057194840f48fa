"""`/docs`: the reference index, Swagger UI for each host's OpenAPI document, the guides, and their assets.

No page asks anything of another host: Swagger UI's files come from the `swagger-ui-bundle-v2` package
(byte-identical to the `swagger-ui-dist` release of the same version; see docs/architecture/dependencies.md), its
remote validator is switched off, and the text gateway's document is served here too
(`/docs/openapi/text.json`, a function the composition root hands to `reference_router`).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from swagger_ui_bundle import swagger_ui_path

from modelport.errors import NotFound
from modelport.media.reference.guides import guide, guides
from modelport.media.reference.pages import HOSTS, guide_page, index_page, swagger_page
from modelport.settings import Settings
from modelport.web.deps import get_services
from modelport.web.envelope import JSONBytesResponse

_SWAGGER_FILES = {"swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png"}
_OWN_FILES = {"reference.css", "swagger-init.js"}
_CACHE = {"cache-control": "public, max-age=3600"}
_MEDIA_TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}


def page_headers(settings: Settings) -> dict[str, str]:
    """Headers of every HTML page under /docs: never framed (X-Frame-Options for older browsers), scripts and
    styles from this host only; Swagger UI may call this host and the text gateway's public URL (from the
    settings, never from the request). Inline style attributes are allowed: Swagger UI sets them."""
    text = urlsplit(settings.effective_public_text_url)
    csp = (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        f"connect-src 'self' {text.scheme}://{text.netloc}; font-src 'self'; object-src 'none'; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
    return {
        "cache-control": "no-cache",
        "content-security-policy": csp,
        "x-frame-options": "DENY",
        "x-content-type-options": "nosniff",
        "referrer-policy": "same-origin",
    }


def _page(request: Request, body: str) -> HTMLResponse:
    return HTMLResponse(body, headers=page_headers(get_services(request).settings))


def reference_router(text_openapi: Callable[[], dict[str, Any]]) -> APIRouter:
    """The `/docs` routes; `text_openapi` returns the text gateway's OpenAPI document (no `servers`)."""
    router = APIRouter(include_in_schema=False)
    router.add_api_route("/docs", reference_index, methods=["GET"])
    router.add_api_route("/docs/", _redirect("/docs"), methods=["GET"])
    router.add_api_route("/docs/api/{host}", reference_api, methods=["GET"])

    async def text_document(request: Request) -> Response:
        # "Try it out" reaches the text gateway at its public URL, from the settings: never from the Host
        # header, which would let a forged request point a reader's key at another server.
        server = get_services(request).settings.effective_public_text_url
        return JSONBytesResponse({**text_openapi(), "servers": [{"url": server, "description": "text gateway"}]})

    router.add_api_route("/docs/openapi/text.json", text_document, methods=["GET"])
    router.add_api_route("/docs/guides", _redirect("/docs/guides/"), methods=["GET"])
    router.add_api_route("/docs/guides/", guides_index, methods=["GET"])
    router.add_api_route("/docs/guides/{name}", guide_by_name, methods=["GET"])
    router.add_api_route("/docs/static/swagger-ui/{name}", swagger_asset, methods=["GET"])
    router.add_api_route("/docs/static/reference/{name}", own_asset, methods=["GET"])
    return router


def _redirect(to: str) -> Callable[[], Any]:
    async def redirect() -> Response:
        return RedirectResponse(to, status_code=308)

    return redirect


async def reference_index(request: Request) -> Response:
    snapshot = await get_services(request).catalog.get()
    models = [(m.slug, m.description) for m in snapshot.media.values() if m.active and m.published]
    return _page(request, index_page(guides().values(), models))


async def reference_api(request: Request, host: str) -> Response:
    if host not in HOSTS:
        raise NotFound(f"no API reference for {host!r}; hosts: {', '.join(HOSTS)}")
    return _page(request, swagger_page(host))


async def guides_index(request: Request) -> Response:
    return await guide_by_name(request, "README")


async def guide_by_name(request: Request, name: str) -> Response:
    found = guide(name.removesuffix(".md"))
    if found is None:
        raise NotFound(f"no guide {name!r}")
    return _page(request, guide_page(found, guides().values()))


def _file(folder: Path, name: str, allowed: set[str]) -> Response:
    if name not in allowed:
        raise NotFound(f"no file {name!r}")
    return FileResponse(folder / name, media_type=_MEDIA_TYPES[Path(name).suffix], headers=_CACHE)


async def swagger_asset(name: str) -> Response:
    return _file(Path(str(swagger_ui_path)), name, _SWAGGER_FILES)


async def own_asset(name: str) -> Response:
    return _file(Path(str(resources.files("modelport.media.reference") / "static")), name, _OWN_FILES)
