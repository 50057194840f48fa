"""The console's errors: HTML pages (not the API's JSON), and a redirect when a sign-in is needed."""

from __future__ import annotations

import logging
from urllib.parse import quote

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from modelport.console.deps import NoTeam, SignInRequired
from modelport.console.templating import console_root, render
from modelport.errors import ServiceError

log = logging.getLogger("modelport.console")


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def sign_in_redirect(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, SignInRequired)
    root = console_root(request)
    here = request.url.path[len(root) :] or "/"
    target = f"{root}{exc.sign_in}"
    if request.method == "GET" and here not in ("/", exc.sign_in):
        target += "?next=" + quote(here + (f"?{request.url.query}" if request.url.query else ""), safe="")
    if is_htmx(request):
        # htmx follows redirects inside its request; HX-Redirect makes the whole page go.
        return Response(status_code=204, headers={"HX-Redirect": target})
    return RedirectResponse(target, status_code=303)


def error_page(request: Request, status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    titles = {
        400: "Bad request",
        403: "Forbidden",
        404: "Not found",
        405: "Method not allowed",
        413: "Form too large",
        410: "Link no longer valid",
        415: "Unsupported form",
        429: "Slow down",
    }
    title = titles.get(status, "Something went wrong" if status >= 500 else "Request refused")
    return render(
        request, "error.html", {"title": title, "status": status, "message": message}, status=status, headers=headers
    )


def service_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ServiceError)
    return error_page(request, exc.status, exc.detail or exc.category, exc.headers)


def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = "There is no such page." if exc.status_code == 404 else str(exc.detail)
    return error_page(request, exc.status_code, message, dict(exc.headers or {}))


def validation_error(request: Request, exc: Exception) -> Response:
    return error_page(request, 400, "The request's parameters are not valid.")


class CatchUnexpected:
    """Innermost-but-sessions guard: an unexpected exception becomes the 500 page, logged once, and stops
    here (Starlette's own server-error handler would re-raise it into the media host's app)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception:
            log.exception("console page failed: %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            request = Request(scope, receive)
            await error_page(request, 500, "The page failed; the error is in the server's log.")(scope, receive, send)


def no_team(request: Request, exc: Exception) -> Response:
    message = "You are not a member of any team yet: ask a team's owner for an invitation."
    return render(
        request, "error.html", {"title": "No team", "status": 403, "message": message, "no_team": True}, status=403
    )


def install_error_pages(app: FastAPI) -> None:
    app.add_exception_handler(SignInRequired, sign_in_redirect)
    app.add_exception_handler(NoTeam, no_team)
    app.add_exception_handler(ServiceError, service_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
