"""CSRF tokens: one random token per session, sent back with every state-changing request.

Forms carry it as the hidden field `csrf_token` (`{{ csrf_field() }}` in a template); htmx requests send
the `X-CSRF-Token` header (set once on `<body hx-headers>`). `verify_csrf` is a dependency of the whole
console app, so no POST handler can forget it. The cookie is also `SameSite=Lax`; the token is what
protects against a same-site attacker and older browsers.
"""

from __future__ import annotations

import hmac
import secrets

from starlette.requests import Request

from modelport.console.sessions import CSRF
from modelport.errors import ServiceError

FIELD = "csrf_token"
HEADER = "x-csrf-token"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class CsrfFailed(ServiceError):
    status = 403
    category = "Forbidden"
    error_type = "permission_error"


def csrf_token(request: Request) -> str:
    """This session's token, created on first use."""
    token = request.session.get(CSRF)
    if not isinstance(token, str) or not token:
        token = secrets.token_urlsafe(32)
        request.session[CSRF] = token
    return token


async def verify_csrf(request: Request) -> None:
    if request.method in _SAFE_METHODS:
        return
    expected = request.session.get(CSRF)
    sent = request.headers.get(HEADER)
    if sent is None:
        content_type = request.headers.get("content-type", "")
        if content_type.startswith("application/x-www-form-urlencoded"):  # the only kind form_limits lets in
            value = (await request.form()).get(FIELD)  # parsed once: Starlette caches the form
            sent = value if isinstance(value, str) else None
    if not isinstance(expected, str) or not sent or not hmac.compare_digest(sent.encode(), expected.encode()):
        raise CsrfFailed("the form has expired or did not come from this console; reload the page and try again")
