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
from modelport.accounts.audit import Actor
from modelport.accounts.auth import AuthContext
from modelport.accounts.members import teams_of
from modelport.accounts.permissions import (
    OperatorPermission,
    Permission,
    allows,
    check_operator,
    check_permission,
)
from modelport.accounts.service import get_team
from modelport.accounts.users import user_in
from modelport.clock import now_ms
from modelport.console.sessions import (
    KEY_ID,
    OPERATOR,
    TEAM_ID,
    USER_ID,
    forget_session,
    operator_marker,
    session_expired,
    session_token,
)
from modelport.errors import Forbidden, NotFound
from modelport.web.actor import request_actor
from modelport.web.deps import client_host, get_services

TEAM_SIGN_IN = "/sign-in"
OPERATOR_SIGN_IN = "/admin/sign-in"


class SignInRequired(Exception):
    """No valid session for this page; `sign_in` is the console-relative path of the sign-in page."""

    def __init__(self, sign_in: str) -> None:
        super().__init__(sign_in)
        self.sign_in = sign_in


class NoTeam(Exception):
    """A signed-in person who is a member of no team (an operator account, or everyone removed them)."""


async def person(request: Request) -> console_sessions.PersonSession | None:
    """The signed-in person's session as the server has it now; None for a key or operator-token session.
    A person's session that has ended (removed, disabled, signed out elsewhere) asks to sign in again."""
    user_id = request.session.get(USER_ID)
    if user_id is None:
        return None
    services = get_services(request)
    token = session_token(request)
    found = None
    if isinstance(user_id, str) and token is not None and not session_expired(request, services.settings):
        found = await console_sessions.person_session(services.db, token, user_id=user_id)
    if found is None:
        forget_session(request)
        raise SignInRequired(TEAM_SIGN_IN)
    request.state.person = found
    return found


async def _person_team(request: Request, found: console_sessions.PersonSession) -> AuthContext:
    services = get_services(request)
    if found.team_id is None or found.team_role is None:
        if found.team_id is not None:  # no longer a member of that team: this session is over
            forget_session(request)
            raise SignInRequired(TEAM_SIGN_IN)
        async with services.db.connect() as conn:
            user = await user_in(conn, found.user_id)
        if user is None or not user.teams:
            raise NoTeam()
        token = session_token(request)
        assert token is not None
        await console_sessions.switch_team(services.db, token, user.teams[0][0])
        found = await person(request) or found
        if found.team_role is None:
            raise NoTeam()
    if found.team_suspended:
        raise Forbidden("this team is suspended: ask the service's operator")
    assert found.team_id is not None and found.team_role is not None
    team = await get_team(services.db, found.team_id)
    context = AuthContext(
        "",
        "",
        team.id,
        team.name,
        team.tier,
        team.log_retention,
        # What a key made here may carry at most (`accounts.grants`): owners and admins may make admin keys.
        role="admin" if allows(found.team_role, Permission.MANAGE_MEMBERS) else "member",
        user_id=found.user_id,
        user_email=found.email,
        member_role=found.team_role,
    )
    request.state.auth = context
    request.state.teams = await teams_of(services.db, found.user_id)
    return context


def console_actor(request: Request, auth: AuthContext) -> Actor:
    """Who acts from a team page: the person (`user`), or the key the session signed in with."""
    if auth.user_id is not None:
        actor = request_actor(request, "user")
        return Actor("user", None, actor.request_id, actor.client, auth.user_id, auth.user_email)
    return request_actor(request, "team_console", key_id=auth.key_id)


async def require_team(request: Request) -> AuthContext:
    """The signed-in team: as the person's membership, or as the auth context of the key it signed in with."""
    found = await person(request)
    if found is not None:
        return await _person_team(request, found)
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
    """An operator session: an operator account's (an `operator_viewer` may only read: 403 on a form), or
    one signed in with `MODELPORT_ADMIN_TOKEN`. Without operator accounts or an admin token, 404."""
    write = request.method not in ("GET", "HEAD")
    await _operator_with(request, OperatorPermission.CHANGE if write else OperatorPermission.READ)


async def require_operator_reading(request: Request) -> None:
    """`require_operator` for a POST that only reads (the key search: a whole key must not be in a URL), so
    an `operator_viewer` may send it too (with the session's CSRF token, as every console form)."""
    await _operator_with(request, OperatorPermission.READ)


async def _operator_with(request: Request, permission: OperatorPermission) -> None:
    services = get_services(request)
    found = await person(request) if USER_ID in request.session else None
    if found is not None:
        if found.operator_role is None:
            raise Forbidden("your account is not an operator account")
        check_operator(found.operator_role, permission)
        request.state.operator_role = found.operator_role
        return
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
    """Whether the admin-token sign-in exists (operator accounts sign in on the team sign-in page)."""
    return get_services(request).settings.admin_token is not None
