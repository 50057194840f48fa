"""The team's members and invitations on the media host, for keys with `role: admin` (which act with the
team role `admin`: members up to admin, never owners). `GET /api/v1/team/members`,
`PATCH/DELETE /api/v1/team/members/{user_id}`, `POST /api/v1/team/members/{user_id}/reset-link`,
`GET/POST /api/v1/team/invitations`, `DELETE /api/v1/team/invitations/{invitation_id}`; shapes in
docs/api/accounts.md. A refused role is the 403 every door gives (`accounts.permissions`)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts import members
from modelport.accounts.auth import AuthContext
from modelport.accounts.permissions import Permission, check_grant
from modelport.errors import InvalidParameters, NotFound
from modelport.operator.people import People
from modelport.team_admin.body import json_body
from modelport.team_admin.reset_links import member_reset_link
from modelport.web.actor import request_actor
from modelport.web.deps import get_services, media_auth_with
from modelport.web.envelope import ok

router = APIRouter(prefix="/api/v1/team", tags=["team"])
_reader = media_auth_with(Permission.MANAGE_MEMBERS)


def _people(request: Request, auth: AuthContext) -> People:
    return People.for_services(get_services(request), request_actor(request, "team_key", key_id=auth.key_id))


async def _object(request: Request) -> dict[str, object]:
    body = await json_body(request)
    if not isinstance(body, dict):
        raise InvalidParameters("the request body must be a JSON object", param="body")
    return body


@router.get("/members", summary="The team's members (admin keys only)")
async def list_members(request: Request, auth: AuthContext = Depends(_reader)) -> Response:
    found = await members.list_members(get_services(request).db, auth.team_id)
    return ok({"members": [m.to_public() for m in found]})


async def _member(request: Request, auth: AuthContext, user_id: str) -> members.Member:
    try:
        found = await members.get_member(get_services(request).db, auth.team_id, user_id[:64])
    except NotFound:
        raise NotFound(f"no member {user_id[:64]!r} in this team") from None
    check_grant(auth, found.role)
    return found


@router.patch("/members/{user_id}", summary="Change a member's role (admin keys only)")
async def set_role(request: Request, user_id: str, auth: AuthContext = Depends(_reader)) -> Response:
    found = await _member(request, auth, user_id)
    role = members.check_role((await _object(request)).get("role"))
    check_grant(auth, role)
    return ok((await _people(request, auth).set_role(auth.team_id, found.user_id, role)).to_public())


@router.delete("/members/{user_id}", summary="Remove a member (admin keys only)")
async def remove_member(request: Request, user_id: str, auth: AuthContext = Depends(_reader)) -> Response:
    found = await _member(request, auth, user_id)
    removed = await _people(request, auth).remove_member(auth.team_id, found.user_id)
    return ok({**removed.to_public(), "removed": True})


@router.post("/members/{user_id}/reset-link", summary="A member's password-reset link (admin keys only)")
async def reset_link(request: Request, user_id: str, auth: AuthContext = Depends(_reader)) -> Response:
    actor = request_actor(request, "team_key", key_id=auth.key_id)
    url, link = await member_reset_link(get_services(request), auth, actor, user_id)
    return ok({"url": url, "expires_at": link.expires_at_ms // 1000})


@router.get("/invitations", summary="The team's invitations (admin keys only)")
async def list_invitations(request: Request, auth: AuthContext = Depends(_reader)) -> Response:
    found = await _people(request, auth).invitations(auth.team_id)
    return ok({"invitations": [i.to_public() for i in found]})


@router.post("/invitations", summary="Invite someone by email (admin keys only; the link is shown once)")
async def invite(request: Request, auth: AuthContext = Depends(_reader)) -> Response:
    body = await _object(request)
    role = members.check_role(body.get("role"))
    check_grant(auth, role)
    email = body.get("email")
    if not isinstance(email, str):
        raise InvalidParameters("email must be an email address", param="email")
    invitation, url = await _people(request, auth).invite(auth.team_id, email, role)
    return ok(invitation.to_public(url))


@router.delete("/invitations/{invitation_id}", summary="Revoke an invitation (admin keys only)")
async def revoke_invitation(request: Request, invitation_id: str, auth: AuthContext = Depends(_reader)) -> Response:
    people = _people(request, auth)
    try:
        found = await people.invitation(invitation_id[:64])
    except NotFound:
        found = None
    if found is None or found.team_id != auth.team_id:
        raise NotFound(f"no invitation {invitation_id[:64]!r}")
    return ok((await people.revoke_invitation(found.id)).to_public())
