"""The console's ASGI app, mounted on the media host at `/console` by the composition root.

Its own FastAPI app (no OpenAPI document), so its session middleware, CSRF check and HTML error pages
touch nothing of the API. Static files are mounted beside it, outside the session middleware, so they
never set a cookie.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, FastAPI
from starlette.middleware.sessions import SessionMiddleware
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from modelport.console import account_links, oidc, profile, signin
from modelport.console.csrf import verify_csrf
from modelport.console.errors import CatchUnexpected, install_error_pages
from modelport.console.form_limits import limit_form
from modelport.console.oidc_provider import OidcProvider
from modelport.console.sessions import RenewSession, middleware_options
from modelport.console.team import ROUTERS as TEAM_ROUTERS
from modelport.services import Services

MOUNT = "/console"

# Every page loads only what this package serves: no CDN, no inline script, no framing.
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_HEADERS = [
    (b"content-security-policy", _CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),  # pages show balances, logs and one-time secrets
]


def security_headers(form_targets: Sequence[str] = ()) -> list[tuple[bytes, bytes]]:
    """The headers of every console response; `form_targets`: origins a form may lead to besides this one
    (single sign-on's provider: the profile's "Link" form redirects there, and browsers apply `form-action`
    to a form's redirects too)."""
    csp = _CSP.replace("form-action 'self'", " ".join(["form-action 'self'", *form_targets]))
    return [(b"content-security-policy", csp.encode()), *_HEADERS[1:]]


class SecurityHeaders:
    def __init__(self, app: ASGIApp, form_targets: Sequence[str] = ()) -> None:
        self.app = app
        self.headers = security_headers(form_targets)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in self.headers if n not in names]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _origins(url: str | None) -> tuple[str, ...]:
    if url is None:
        return ()
    parts = urlsplit(url)
    return (f"{parts.scheme}://{parts.netloc}",)


def console_routers(routers: Sequence[APIRouter] = ()) -> tuple[APIRouter, ...]:
    """Every router of the console app, in matching order (the tests walk their routes)."""
    return (signin.router, oidc.router, account_links.router, profile.router, *TEAM_ROUTERS, *routers)


def create_console_app(services: Services, routers: Sequence[APIRouter] = ()) -> FastAPI:
    """The console app; `routers` are added after the team console's (the operator console's go here)."""
    # Body limits first: nothing reads a form before them (the CSRF check is its first reader).
    checks = [Depends(limit_form), Depends(verify_csrf)]
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None, dependencies=checks)
    app.state.services = services
    settings = services.settings
    if settings.oidc.enabled:  # one provider client per app: its metadata and keys are cached
        callback = oidc.callback_url(settings.effective_public_media_url)
        app.state.oidc = OidcProvider(settings.oidc, callback)
    install_error_pages(app)
    for router in console_routers(routers):
        app.include_router(router)
    app.add_middleware(CatchUnexpected)  # inside the sessions: the 500 page still has the session
    app.add_middleware(RenewSession)  # inside the sessions too: it marks the session for re-signing
    app.add_middleware(SessionMiddleware, **middleware_options(services))
    app.add_middleware(SecurityHeaders, form_targets=_origins(settings.oidc.issuer))
    return app


def mount_console(app: FastAPI, services: Services, routers: Sequence[APIRouter] = ()) -> None:
    """Mount the console (and its static files) on the media host app."""
    static = StaticFiles(packages=[("modelport.console", "static")])
    app.mount(f"{MOUNT}/static", static, name="console-static")
    console = Mount(MOUNT, app=create_console_app(services, routers), name="console")
    # Starlette's mount pattern (`^/console/(?P<path>.*)$`) stops at a newline: a console URL holding `%0A`
    # would fall through to the media host's JSON 404. Matched across lines, it gets the console's page.
    console.path_regex = re.compile(console.path_regex.pattern, re.DOTALL)
    app.router.routes.append(console)
