"""The console's request bodies: `application/x-www-form-urlencoded` only, capped, read before any parsing.

A dependency of the whole console app, ahead of the CSRF check (the first reader of a form): a body of
another type is a 415 (no multipart parser ever runs, so nothing is spooled to disk), a `Content-Length`
over the cap a 413 before a byte is read, and a body without one (chunked) is counted as it arrives and
refused once past the cap. The sign-in forms get `console.sign_in_form_max_bytes` (4 KiB: a key or an
admin token and a path), every other form `console.form_max_bytes` (64 KiB: the catalog editor's spec).
The body read here is what `request.form()` parses later (Starlette keeps it on the request).
"""

from __future__ import annotations

from starlette.requests import Request

from modelport.console.templating import console_root
from modelport.errors import PayloadTooLarge, ServiceError
from modelport.web.body import read_body
from modelport.web.deps import get_services

FORM_TYPE = "application/x-www-form-urlencoded"
SIGN_IN_PATHS = frozenset({"/sign-in", "/admin/sign-in"})
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class UnsupportedForm(ServiceError):
    status = 415
    category = "Unsupported media type"
    error_type = "invalid_request_error"


def form_cap(request: Request) -> int:
    settings = get_services(request).settings.console
    here = request.url.path[len(console_root(request)) :]
    return settings.sign_in_form_max_bytes if here in SIGN_IN_PATHS else settings.form_max_bytes


async def limit_form(request: Request) -> None:
    if request.method in _SAFE_METHODS:
        return
    length = request.headers.get("content-length")
    if "transfer-encoding" not in request.headers and length in (None, "0"):
        return  # no body (an htmx POST without fields, a sign-out button)
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type != FORM_TYPE:
        raise UnsupportedForm(f"the console's forms are sent as {FORM_TYPE} only")
    cap = form_cap(request)
    body = await read_body(request, cap, PayloadTooLarge(f"the form is larger than {cap} bytes"))
    request._body = body  # what request.body()/form() read from now on (Starlette's own cache)
