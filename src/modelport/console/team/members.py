"""Members: the team's people and pending invitations; owners and admins invite, change roles and remove
(admins up to `admin`; only owners touch owners: `accounts.permissions.may_grant`) and make a member's
password-reset link (`team_admin.reset_links`). An invitation's or a reset link is shown in the answer that
creates it, once. Every member sees the list; only the roles that may change it
see its buttons, and a refused form is the same 403 as the team API's."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from modelport.accounts import console_sessions, links, members
from modelport.accounts.auth import AuthContext
from modelport.accounts.permissions import Permission, allows, check_grant, may_grant
from modelport.console.deps import TEAM_SIGN_IN, SignInRequired, console_actor, person, team_with
from modelport.console.sessions import KEY_ID, session_token
from modelport.console.templating import console_root, render
from modelport.errors import Forbidden, NotFound
from modelport.operator.people import People
from modelport.team_admin.reset_links import member_reset_link
from modelport.web.deps import get_services

router = APIRouter()
_viewer = team_with(Permission.VIEW)
_manager = team_with(Permission.MANAGE_MEMBERS)


def _people(request: Request, auth: AuthContext) -> People:
    return People.for_services(get_services(request), console_actor(request, auth))


async def _page(
    request: Request,
    auth: AuthContext,
    *,
    invited_url: str | None = None,
    reset: tuple[str, str] | None = None,
    status: int = 200,
) -> Response:
    engine = get_services(request).db
    manage = allows(auth.team_role, Permission.MANAGE_MEMBERS)
    context = {
        "title": "Members",
        "active": "members",
        "members": await members.list_members(engine, auth.team_id),
        "invitations": await links.list_invitations(engine, auth.team_id, pending_only=True) if manage else [],
        "manage": manage,
        "grantable": [r for r in ("owner", "admin", "developer", "viewer") if may_grant(auth.team_role, r)],
        "may_grant": lambda role: may_grant(auth.team_role, role),
        "invited_url": invited_url,
        "reset": reset,  # (the member's email, the link)
    }
    return render(request, "team/members.html", context, status=status)


@router.get("/members")
async def members_page(request: Request, auth: AuthContext = Depends(_viewer)) -> Response:
    return await _page(request, auth)


def _field(form: object, name: str) -> str:
    value = form.get(name) if hasattr(form, "get") else None
    return value.strip() if isinstance(value, str) else ""


@router.post("/members/invite")
async def invite(request: Request, auth: AuthContext = Depends(_manager)) -> Response:
    form = await request.form()
    role = members.check_role(_field(form, "role"))
    check_grant(auth, role)
    _, url = await _people(request, auth).invite(auth.team_id, _field(form, "email"), role, created_by=auth.user_id)
    # Rendered, not redirected: the link exists in this answer only.
    return await _page(request, auth, invited_url=url, status=201)


async def _member(request: Request, auth: AuthContext, user_id: str) -> members.Member:
    found = await members.get_member(get_services(request).db, auth.team_id, user_id[:64])
    check_grant(auth, found.role)  # an admin cannot change or remove an owner
    return found


@router.post("/members/{user_id}/role")
async def set_role(request: Request, user_id: str, auth: AuthContext = Depends(_manager)) -> Response:
    form = await request.form()
    found = await _member(request, auth, user_id)
    role = members.check_role(_field(form, "role"))
    check_grant(auth, role)
    await members.set_role(
        get_services(request).db, auth.team_id, found.user_id, role, actor=console_actor(request, auth)
    )
    return RedirectResponse(f"{console_root(request)}/members", status_code=303)


@router.post("/members/{user_id}/remove")
async def remove(request: Request, user_id: str, auth: AuthContext = Depends(_manager)) -> Response:
    found = await _member(request, auth, user_id)
    await _people(request, auth).remove_member(auth.team_id, found.user_id)
    return RedirectResponse(f"{console_root(request)}/members", status_code=303)


@router.post("/members/{user_id}/reset-link")
async def reset_link(request: Request, user_id: str, auth: AuthContext = Depends(_manager)) -> Response:
    services = get_services(request)
    url, _ = await member_reset_link(services, auth, console_actor(request, auth), user_id)
    found = await members.get_member(services.db, auth.team_id, user_id[:64])
    # Rendered, not redirected: the link exists in this answer only.
    return await _page(request, auth, reset=(found.email, url), status=201)


@router.post("/members/invitations/{invitation_id}/revoke")
async def revoke_invitation(request: Request, invitation_id: str, auth: AuthContext = Depends(_manager)) -> Response:
    people = _people(request, auth)
    found = await people.invitation(invitation_id[:64])
    if found.team_id != auth.team_id:
        raise NotFound(f"no invitation {invitation_id[:64]!r}")
    await people.revoke_invitation(found.id)
    return RedirectResponse(f"{console_root(request)}/members", status_code=303)


@router.post("/switch-team")
async def switch_team(request: Request) -> Response:
    """Move the person's session to another of their teams."""
    found = await person(request)
    if found is None:
        if request.session.get(KEY_ID):
            raise Forbidden("only a person signed in with their email belongs to several teams")
        raise SignInRequired(TEAM_SIGN_IN)
    form = await request.form()
    team_id = _field(form, "team_id")
    services = get_services(request)
    if team_id not in {t.id for t in await members.teams_of(services.db, found.user_id)}:
        raise Forbidden("you are not a member of that team")
    token = session_token(request)
    assert token is not None
    await console_sessions.switch_team(services.db, token, team_id)
    return RedirectResponse(f"{console_root(request)}/", status_code=303)
