"""A person's profile: name, password, second factor (TOTP with 10 recovery codes, shown once), their
personal keys in every team, and their sessions with "sign out everywhere". Any signed-in person, whatever
their teams; each change is audited with actor `user`."""

from __future__ import annotations

import contextlib
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from modelport.accounts import console_sessions, credentials, totp
from modelport.accounts.audit import Actor
from modelport.accounts.identities import identities_of
from modelport.accounts.service import list_personal_keys
from modelport.accounts.totp_secrets import TOTP_SECRETS
from modelport.accounts.users import User, end_all_sessions, get_user, set_name
from modelport.console.deps import TEAM_SIGN_IN, NoTeam, SignInRequired, person, require_team
from modelport.console.sessions import KEY_ID, forget_session, session_token
from modelport.console.templating import console_root, render
from modelport.errors import Forbidden, InvalidParameters
from modelport.web.actor import request_actor
from modelport.web.deps import get_services

router = APIRouter()
FLASH = "profile_flash"  # a one-time [kind, message] of the single sign-on link flow (console/oidc.py)
PERSON_ONLY = "this page belongs to a person: sign in with your email and password"


async def _me(request: Request) -> tuple[User, Actor]:
    found = await person(request)
    if found is None:
        if request.session.get(KEY_ID):
            raise Forbidden(PERSON_ONLY)
        raise SignInRequired(TEAM_SIGN_IN)
    if found.team_id is not None or found.operator_role is None:
        with contextlib.suppress(NoTeam):
            await require_team(request)  # the page's header: the team, the switcher and the navigation
    user = await get_user(get_services(request).db, found.user_id)
    base = request_actor(request, "user")
    return user, Actor("user", None, base.request_id, base.client, user.id, user.email)


def _field(form: object, name: str, *, strip: bool = True) -> str:
    value = form.get(name) if hasattr(form, "get") else None
    if not isinstance(value, str):
        return ""
    return value.strip() if strip else value


async def _page(request: Request, user: User, *, status: int = 200, **extra: Any) -> Response:
    services = get_services(request)
    token = session_token(request)
    current = console_sessions.token_digest(token) if token else None
    oidc = services.settings.oidc
    flash = request.session.pop(FLASH, None)  # what the single sign-on link flow ended with
    if isinstance(flash, list) and len(flash) == 2 and flash[0] in ("notice", "error"):
        extra = {flash[0]: str(flash[1]), **extra}
    context = {
        "title": "Profile",
        "sso": oidc.display_name if oidc.enabled else None,
        "identities": await identities_of(services.db, user.id) if oidc.enabled else [],
        "active": "profile",
        "user": user,
        "personal_keys": await list_personal_keys(services.db, user.id),
        "sessions": await console_sessions.person_sessions(services.db, user.id),
        "current_session": current,
        "notice": None,
        "error": None,
        "totp_secret": None,
        "totp_uri": None,
        "recovery_codes": None,
        **extra,
    }
    return render(request, "profile.html", context, status=status)


@router.get("/profile")
async def profile(request: Request) -> Response:
    user, _ = await _me(request)
    return await _page(request, user)


@router.post("/profile/name")
async def rename(request: Request) -> Response:
    user, actor = await _me(request)
    form = await request.form()
    await set_name(get_services(request).db, user.id, _field(form, "name") or None, actor=actor)
    return RedirectResponse(f"{console_root(request)}/profile", status_code=303)


@router.post("/profile/password")
async def change_password(request: Request) -> Response:
    user, actor = await _me(request)
    form = await request.form()
    new = _field(form, "new_password", strip=False)
    if new != _field(form, "new_password_again", strip=False):
        return await _page(request, user, error="The two new passwords differ.", status=400)
    token = session_token(request)
    keep = console_sessions.token_digest(token) if token else None
    try:
        await credentials.change_password(
            get_services(request).db,
            user,
            _field(form, "current_password", strip=False),
            new,
            actor=actor,
            keep_session=keep,
        )
    except (Forbidden, InvalidParameters) as exc:
        return await _page(request, user, error=exc.detail, status=exc.status)
    return await _page(request, user, notice="Password changed; your other sessions have ended.")


@router.post("/profile/second-factor/start")
async def second_factor_start(request: Request) -> Response:
    user, _ = await _me(request)
    services = get_services(request)
    secret = await credentials.start_second_factor(services.db, services.secret_box(TOTP_SECRETS), user)
    return await _page(request, user, totp_secret=secret, totp_uri=totp.provisioning_uri(secret, user.email))


@router.post("/profile/second-factor/confirm")
async def second_factor_confirm(request: Request) -> Response:
    user, actor = await _me(request)
    form = await request.form()
    services = get_services(request)
    box = services.secret_box(TOTP_SECRETS)
    try:
        codes = await credentials.confirm_second_factor(services.db, box, user, _field(form, "code"), actor=actor)
    except InvalidParameters as exc:
        secret = await credentials.pending_secret(services.db, box, user.id)
        uri = totp.provisioning_uri(secret, user.email) if secret else None
        return await _page(request, user, error=exc.detail, status=400, totp_secret=secret, totp_uri=uri)
    user = await get_user(services.db, user.id)
    return await _page(request, user, recovery_codes=codes, notice="The second factor is on.")


@router.post("/profile/second-factor/off")
async def second_factor_off(request: Request) -> Response:
    user, actor = await _me(request)
    form = await request.form()
    services = get_services(request)
    try:
        await credentials.turn_off_second_factor(services.db, user, _field(form, "password", strip=False), actor=actor)
    except Forbidden as exc:
        return await _page(request, user, error=exc.detail, status=403)
    return await _page(request, await get_user(services.db, user.id), notice="The second factor is off.")


@router.post("/profile/sign-out-everywhere")
async def sign_out_everywhere(request: Request) -> Response:
    user, actor = await _me(request)
    await end_all_sessions(get_services(request).db, user.id, actor=actor)
    forget_session(request)
    return RedirectResponse(f"{console_root(request)}{TEAM_SIGN_IN}", status_code=303)
