"""Console sessions: a signed cookie (Starlette's SessionMiddleware), so any worker process can read it.

The cookie holds only ids and times: for a team the team id and the API key's id (never the key), for an
operator an HMAC of the admin token (changing the token ends every operator session). The cookie is
re-signed on every response and refused after `session_idle_seconds` without one; `signed_in_at` caps a
session at `session_max_seconds` whatever its activity.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

from starlette.requests import Request

from modelport.clock import now_ms
from modelport.errors import RateLimited
from modelport.services import Services
from modelport.settings import Settings

COOKIE_NAME = "modelport_console"
COOKIE_PATH = "/console"

TEAM_ID = "team_id"
KEY_ID = "key_id"
OPERATOR = "operator"
SIGNED_IN_AT = "signed_in_at"
CSRF = "csrf"


def derived_key(services: Services, purpose: str) -> bytes:
    """A key for one purpose, derived from the service's secret (shared by every process)."""
    return hmac.new(services.secret_key.encode(), f"console:{purpose}".encode(), hashlib.sha256).digest()


def session_secret(services: Services) -> str:
    return derived_key(services, "session").hex()


def secure_cookie(settings: Settings) -> bool:
    if settings.console.secure_cookie is not None:
        return settings.console.secure_cookie
    return settings.effective_public_media_url.startswith("https://")


def middleware_options(services: Services) -> dict[str, Any]:
    """Keyword arguments of `SessionMiddleware` for the console app."""
    return {
        "secret_key": session_secret(services),
        "session_cookie": COOKIE_NAME,
        "max_age": services.settings.console.session_idle_seconds,
        "path": COOKIE_PATH,
        "same_site": "lax",
        "https_only": secure_cookie(services.settings),
    }


def session_expired(request: Request, settings: Settings) -> bool:
    signed_in = request.session.get(SIGNED_IN_AT)
    if not isinstance(signed_in, int):
        return True
    return now_ms() - signed_in > settings.console.session_max_seconds * 1000


def _start(request: Request, values: dict[str, Any]) -> None:
    # A fresh session and CSRF token at every sign-in.
    request.session.clear()
    request.session.update(values)
    request.session[SIGNED_IN_AT] = now_ms()
    request.session[CSRF] = secrets.token_urlsafe(32)


def start_team_session(request: Request, team_id: str, key_id: str) -> None:
    _start(request, {TEAM_ID: team_id, KEY_ID: key_id})


def operator_marker(services: Services) -> str | None:
    """What an operator session stores: an HMAC of the current admin token; None when there is no token."""
    token = services.settings.admin_token
    if token is None:
        return None
    return hmac.new(derived_key(services, "operator"), token.get_secret_value().encode(), hashlib.sha256).hexdigest()


def check_admin_token(services: Services, candidate: str) -> bool:
    token = services.settings.admin_token
    if token is None or not candidate:
        return False
    return hmac.compare_digest(candidate.encode(), token.get_secret_value().encode())


def start_operator_session(request: Request, services: Services) -> None:
    marker = operator_marker(services)
    assert marker is not None
    _start(request, {OPERATOR: marker})


def end_session(request: Request) -> None:
    request.session.clear()


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


async def limit_sign_in(request: Request, services: Services) -> None:
    """Count one sign-in attempt from this client address; RateLimited over the limit.

    The process's rate limiter: in Redis when configured, so every process and machine shares the count."""
    limit = services.settings.console.sign_in_per_minute
    decision = await services.limiters.rate.hit(f"console:sign-in:{client_address(request)}", limit)
    if not decision.allowed:
        raise RateLimited(
            f"too many sign-in attempts; try again in {decision.retry_after} s",
            headers={"Retry-After": str(decision.retry_after)},
        )
