"""Console sessions: a signed cookie (Starlette's SessionMiddleware) naming a session row on the server.

The cookie holds only ids, times and a random session token: for a team the team id and the API key's id
(never the key), for an operator an HMAC of the admin token (changing the token ends every operator
session). The token's row (`accounts.console_sessions`) is what makes a session revocable: every request
of a signed-in page reads it, so sign-out, key revocation, suspension and an operator's "end sessions"
end a copied cookie too, on every process at once. The cookie is re-signed on every response and refused
after `session_idle_seconds` without one; the row expires `session_max_seconds` after sign-in whatever
the activity.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

from starlette.middleware.sessions import Session
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from modelport.accounts import console_sessions
from modelport.accounts.keys import VISIBLE_PREFIX_LENGTH
from modelport.clock import now_ms
from modelport.errors import RateLimited
from modelport.services import Services
from modelport.settings import Settings
from modelport.web.deps import client_address

COOKIE_NAME = "modelport_console"
COOKIE_PATH = "/console"

TEAM_ID = "team_id"
KEY_ID = "key_id"
USER_ID = "user_id"  # a person's session (accounts/users.py): the team they are in is in the session's row
PENDING_USER = "pending_user"  # password accepted, second factor still to come
PENDING_AT = "pending_at"
OPERATOR = "operator"
SIGNED_IN_AT = "signed_in_at"
CSRF = "csrf"
TOKEN = "sid"  # the session row's token


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


class RenewSession:
    """Inside `SessionMiddleware`: every response to a request with a session re-signs its cookie (a new
    signed time and `Max-Age`), so `session_idle_seconds` counts from the last request, not from sign-in.
    Starlette sets the cookie only when the session changed; this marks a non-empty session changed as the
    response starts (an emptied one is left alone: its cookie is cleared)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_renewed(message: Message) -> None:
            if message["type"] == "http.response.start":
                session = scope.get("session")
                if isinstance(session, Session) and session:
                    session.mark_modified()
            await send(message)

        await self.app(scope, receive, send_renewed)


def session_expired(request: Request, settings: Settings) -> bool:
    signed_in = request.session.get(SIGNED_IN_AT)
    if not isinstance(signed_in, int):
        return True
    return now_ms() - signed_in > settings.console.session_max_seconds * 1000


async def _start(request: Request, services: Services, values: dict[str, Any], *, team_id: str | None) -> None:
    # A fresh session, row and CSRF token at every sign-in; the session this browser had before ends.
    await end_session(request, services)
    lifetime_ms = services.settings.console.session_max_seconds * 1000
    key_id = values.get(KEY_ID)
    user_id = values.get(USER_ID)
    token = await console_sessions.start(
        services.db, lifetime_ms=lifetime_ms, team_id=team_id, key_id=key_id, user_id=user_id
    )
    request.session.update(values)
    request.session[TOKEN] = token
    request.session[SIGNED_IN_AT] = now_ms()
    request.session[CSRF] = secrets.token_urlsafe(32)


async def start_team_session(request: Request, services: Services, team_id: str, key_id: str) -> None:
    await _start(request, services, {TEAM_ID: team_id, KEY_ID: key_id}, team_id=team_id)


async def start_person_session(request: Request, services: Services, user_id: str, team_id: str | None) -> None:
    """A person's session, in `team_id` (their first team; None without one). The session id is new: the
    browser's earlier session (and any id an attacker planted) ends here."""
    await _start(request, services, {USER_ID: user_id}, team_id=team_id)


def session_token(request: Request) -> str | None:
    token = request.session.get(TOKEN)
    return token if isinstance(token, str) and token else None


def operator_marker(services: Services) -> str | None:
    """What an operator session stores: an HMAC of the current admin token; None when there is no token."""
    token = services.settings.admin_token
    if token is None:
        return None
    return hmac.new(derived_key(services, "operator"), token.get_secret_value().encode(), hashlib.sha256).hexdigest()


async def start_operator_session(request: Request, services: Services) -> None:
    marker = operator_marker(services)
    assert marker is not None
    await _start(request, services, {OPERATOR: marker}, team_id=None)


def forget_session(request: Request) -> None:
    """Clear the browser's copy (the server's row, if any, is already gone or invalid)."""
    request.session.clear()


async def end_session(request: Request, services: Services) -> None:
    """Sign out: the session's row goes (so a copy of the cookie stops working too), then the cookie."""
    token = session_token(request)
    if token is not None:
        await console_sessions.end(services.db, token)
    request.session.clear()


def _prefix_bucket(key: str) -> str:
    # The visible prefix of the key tried, hashed: a bounded, printable limiter key whatever was sent.
    return hashlib.sha256(key[:VISIBLE_PREFIX_LENGTH].encode("utf-8", "replace")).hexdigest()[:24]


async def count_failed_sign_in(request: Request, services: Services, key_tried: str) -> RateLimited | None:
    """Count one failed team sign-in against the client address and against the key prefix tried; the
    RateLimited to answer when either is over `sign_in_per_minute`. Only failures are counted, and only
    after the key was checked: a correct key is never refused here (keys are 256-bit random, so the limit
    is there to slow sprays and keep the log readable, not to protect a key from being guessed).

    The process's rate limiter: in Redis when configured, so every process and machine shares the count."""
    limit = services.settings.console.sign_in_per_minute
    denied = None
    for bucket in (
        f"console:sign-in-fail:addr:{client_address(request)}",
        f"console:sign-in-fail:key:{_prefix_bucket(key_tried)}",
    ):
        decision = await services.limiters.rate.hit(bucket, limit)
        if not decision.allowed and (denied is None or decision.retry_after > denied.retry_after):
            denied = decision
    if denied is None:
        return None
    return RateLimited(
        f"too many failed sign-in attempts; try again in {denied.retry_after} s",
        headers={"Retry-After": str(denied.retry_after)},
    )


def _account_bucket(email: str) -> str:
    return hashlib.sha256(email.strip().lower().encode("utf-8", "replace")).hexdigest()[:24]


async def count_failed_person_sign_in(request: Request, services: Services, email: str) -> RateLimited | None:
    """Count one refused email sign-in (a wrong password or second-factor code) against the account tried
    and the client address; the RateLimited to answer when either is past `accounts.sign_in_failures` in
    `accounts.sign_in_window_seconds`. Counted after the check, so a correct credential is never refused."""
    settings = services.settings.accounts
    denied = None
    for bucket in (
        f"console:person-fail:addr:{client_address(request)}",
        f"console:person-fail:account:{_account_bucket(email)}",
    ):
        decision = await services.limiters.rate.hit(bucket, settings.sign_in_failures, settings.sign_in_window_seconds)
        if not decision.allowed and (denied is None or decision.retry_after > denied.retry_after):
            denied = decision
    if denied is None:
        return None
    return RateLimited(
        f"too many failed sign-in attempts; try again in {denied.retry_after} s",
        headers={"Retry-After": str(denied.retry_after)},
    )
