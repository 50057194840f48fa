"""The pages of the links people get: setup (`/setup/{token}`), password reset (`/reset/{token}`) and
invitations (`/invite/{token}`). A used, revoked, expired or unknown link answers 410 with the page
`This link is no longer valid`.

Accepting an invitation creates the account (name and password) when no account has the invited email;
for an existing account it asks the person to sign in first (and come back to the link), then adds them.
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from modelport.accounts import links
from modelport.accounts.users import FIRST_OPERATOR_EMAIL, get_user, user_in
from modelport.console.deps import TEAM_SIGN_IN, person
from modelport.console.sessions import USER_ID, start_person_session
from modelport.console.signin import OPERATOR_HOME
from modelport.console.templating import console_root, render
from modelport.errors import Conflict, InvalidParameters
from modelport.web.deps import client_host, get_services

router = APIRouter()


def _value(form: object, name: str, *, strip: bool = True) -> str:
    value = form.get(name) if hasattr(form, "get") else None
    if not isinstance(value, str):
        return ""
    return value.strip() if strip else value


async def _link_page(request: Request, token: str, *, error: str | None = None, status: int = 200) -> Response:
    services = get_services(request)
    user_id, kind = await links.link_user(services.db, token)  # 410 when it is no longer valid
    user = await get_user(services.db, user_id)
    context = {
        "title": "Set your password" if kind == "setup" else "Choose a new password",
        "kind": kind,
        "user": user,
        "ask_email": user.email == FIRST_OPERATOR_EMAIL,
        "action": f"/{kind}/{token}",
        "error": error,
    }
    return render(request, "account_link.html", context, status=status)


async def _redeem(request: Request, token: str) -> Response:
    services = get_services(request)
    form = await request.form()
    password = _value(form, "password", strip=False)
    if password != _value(form, "password_again", strip=False):
        return await _link_page(request, token, error="The two passwords differ.", status=400)
    try:
        user_id = await links.redeem_link(
            services.db,
            token,
            password,
            name=_value(form, "name") or None,
            email=_value(form, "email") or None,
            actor_client=client_host(request),
        )
    except (InvalidParameters, Conflict) as exc:
        return await _link_page(request, token, error=exc.detail, status=exc.status)
    user = await get_user(services.db, user_id)
    await start_person_session(request, services, user.id, user.teams[0][0] if user.teams else None)
    home = "/" if user.teams or user.operator_role is None else OPERATOR_HOME
    return RedirectResponse(console_root(request) + home, status_code=303)


@router.get("/setup/{token}")
async def setup_page(request: Request, token: str) -> Response:
    return await _link_page(request, token)


@router.post("/setup/{token}")
async def setup(request: Request, token: str) -> Response:
    return await _redeem(request, token)


@router.get("/reset/{token}")
async def reset_page(request: Request, token: str) -> Response:
    return await _link_page(request, token)


@router.post("/reset/{token}")
async def reset(request: Request, token: str) -> Response:
    return await _redeem(request, token)


async def _invite_page(request: Request, token: str, *, error: str | None = None, status: int = 200) -> Response:
    services = get_services(request)
    invitation = await links.invitation_by_token(services.db, token)  # 410 when it is no longer valid
    async with services.db.connect() as conn:
        existing = await user_in(conn, invitation.email)
    signed_in = request.session.get(USER_ID)
    context = {
        "title": "Join the team",
        "invitation": invitation,
        "team_name": (await links.team_name(services.db, invitation.team_id)),
        "existing": existing is not None,
        "signed_in_as_invited": existing is not None and signed_in == existing.id,
        "signed_in_other": signed_in is not None and (existing is None or signed_in != existing.id),
        "sign_in_url": f"{console_root(request)}{TEAM_SIGN_IN}?next=/invite/{token}",
        "action": f"/invite/{token}",
        "error": error,
    }
    return render(request, "invitation.html", context, status=status)


@router.get("/invite/{token}")
async def invite_page(request: Request, token: str) -> Response:
    return await _invite_page(request, token)


@router.post("/invite/{token}")
async def accept(request: Request, token: str) -> Response:
    services = get_services(request)
    form = await request.form()
    signed_in = request.session.get(USER_ID)
    try:
        if isinstance(signed_in, str):
            await person(request)  # the person's session must still be live, not merely a cookie naming them
            invitation, user_id = await links.accept_invitation(
                services.db, token, user_id=signed_in, client=client_host(request)
            )
        else:
            password = _value(form, "password", strip=False)
            if password != _value(form, "password_again", strip=False):
                return await _invite_page(request, token, error="The two passwords differ.", status=400)
            invitation, user_id = await links.accept_invitation(
                services.db, token, name=_value(form, "name") or None, password=password, client=client_host(request)
            )
    except (InvalidParameters, Conflict) as exc:
        return await _invite_page(request, token, error=exc.detail, status=exc.status)
    await start_person_session(request, services, user_id, invitation.team_id)
    return RedirectResponse(console_root(request) + "/", status_code=303)
