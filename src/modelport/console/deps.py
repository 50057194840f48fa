"""Who is signed in: `require_team` (`team_with` a permission) and `require_operator`, dependencies of the
console's pages.

Without a valid session they raise `SignInRequired` (the console answers a redirect to the sign-in page;
for an htmx request an `HX-Redirect`). Every request reads the session's row (`accounts.console_sessions`,
one primary-key read joined with the key and the team), uncached: a sign-out, a revocation, a suspension
or an operator's "end sessions" ends the session at the next request, on every process.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request

from modelport.accounts import console_sessions
from modelport.accounts.auth import AuthContext
from modelport.accounts.permissions import Permission, check_permission
from modelport.clock import now_ms
from modelport.console.sessions import (
    KEY_ID,
    OPERATOR,
    TEAM_ID,
    forget_session,
    operator_marker,
    session_expired,
    session_token,
)
from modelport.errors import NotFound
from modelport.web.deps import client_host, get_services

TEAM_SIGN_IN = "/sign-in"
OPERATOR_SIGN_IN = "/admin/sign-in"


class SignInRequired(Exception):
    """No valid session for this page; `sign_in` is the console-relative path of the sign-in page."""

    def __init__(self, sign_in: str) -> None:
        super().__init__(sign_in)
        self.sign_in = sign_in


async def require_team(request: Request) -> AuthContext:
    """The signed-in team (as the auth context of the key it signed in with)."""
    services = get_services(request)
    team_id, key_id, token = request.session.get(TEAM_ID), request.session.get(KEY_ID), session_token(request)
    if (
        not isinstance(team_id, str)
        or not isinstance(key_id, str)
        or token is None
        or session_expired(request, services.settings)
        or not await console_sessions.team_session_valid(services.db, token, team_id=team_id, key_id=key_id)
    ):
        forget_session(request)  # never signed in, expired, ended, or its key or team refused now
        raise SignInRequired(TEAM_SIGN_IN)
    context = await services.auth.authenticate_key_id(key_id)
    if context is not None and context.limits is not None and context.refusal(now_ms(), client_host(request)):
        context = None  # expired, or used from outside its allowed addresses: as if revoked
    if context is None or context.team_id != team_id:
        forget_session(request)  # the key was revoked (or the session is not ours): sign in again
        raise SignInRequired(TEAM_SIGN_IN)
    request.state.auth = context
    return context


def team_with(permission: Permission) -> Callable[[Request], Awaitable[AuthContext]]:
    """`require_team`, then 403 unless the session's key has `permission`: the rule (and the message) of the
    API route that does the same thing (`accounts.permissions`)."""

    async def dependency(request: Request) -> AuthContext:
        auth = await require_team(request)
        check_permission(auth, permission)
        return auth

    return dependency


async def require_operator(request: Request) -> None:
    """An operator session. Without `MODELPORT_ADMIN_TOKEN` the operator console does not exist (404)."""
    services = get_services(request)
    marker = operator_marker(services)
    if marker is None:
        raise NotFound(f"no page {request.url.path}")
    stored = request.session.get(OPERATOR)
    if stored is None:
        raise SignInRequired(OPERATOR_SIGN_IN)  # a team's session stays as it is
    token = session_token(request)
    if (
        stored != marker
        or token is None
        or session_expired(request, services.settings)
        or not await console_sessions.operator_session_valid(services.db, token)
    ):
        forget_session(request)  # expired, signed out, or signed in with an admin token that has since changed
        raise SignInRequired(OPERATOR_SIGN_IN)


def operator_console_enabled(request: Request) -> bool:
    return get_services(request).settings.admin_token is not None
