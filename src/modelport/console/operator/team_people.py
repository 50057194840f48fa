"""A team's people on its operator page (`/console/admin/teams/{team}`): add an existing user by email with a
role, change a member's role, remove a member; invite an email (the link shown once), revoke an invitation.
Through `operator.people.People`, as the admin API's `/admin/v1/teams/{team}/members|invitations` and the
CLI. A refused action (the last owner, an unknown email, a member already there) is shown on the team's page
with its status and the admin API's message (`Conflict: a team keeps at least one owner`)."""

from __future__ import annotations

from collections.abc import Awaitable

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.console.deps import require_operator
from modelport.console.operator.common import back, flash, form_fields, people
from modelport.console.operator.teams import render_team_page
from modelport.errors import ServiceError

router = APIRouter(prefix="/admin", dependencies=[Depends(require_operator)])


async def _acted(request: Request, team_ref: str, action: Awaitable[object], done: str) -> Response:
    """Run `action`; on success flash `done` and go back to the team's page, on a refusal show it there."""
    try:
        await action
    except ServiceError as exc:
        return await render_team_page(request, team_ref, refusal=exc.media_message, status=exc.status)
    flash(request, done)
    return back(request, f"/admin/teams/{team_ref}")


@router.post("/teams/{team_ref}/members")
async def add_member(request: Request, team_ref: str) -> Response:
    fields = await form_fields(request)
    email, role = fields.get("email", ""), fields.get("role", "")
    added = people(request).add_member(team_ref, email, role)
    return await _acted(request, team_ref, added, f"Added {email} as {role}.")


@router.post("/teams/{team_ref}/members/{user_id}/role")
async def set_role(request: Request, team_ref: str, user_id: str) -> Response:
    role = (await form_fields(request)).get("role", "")
    changed = people(request).set_role(team_ref, user_id[:64], role)
    return await _acted(request, team_ref, changed, f"Changed the member's role to {role}.")


@router.post("/teams/{team_ref}/members/{user_id}/remove")
async def remove_member(request: Request, team_ref: str, user_id: str) -> Response:
    removed = people(request).remove_member(team_ref, user_id[:64])
    return await _acted(request, team_ref, removed, "Removed the member: their sessions and personal keys ended.")


@router.post("/teams/{team_ref}/invitations")
async def invite(request: Request, team_ref: str) -> Response:
    fields = await form_fields(request)
    found = getattr(request.state, "person", None)
    try:
        invitation, url = await people(request).invite(
            team_ref,
            fields.get("email", ""),
            fields.get("role", ""),
            created_by=None if found is None else found.user_id,
        )
    except ServiceError as exc:
        return await render_team_page(request, team_ref, refusal=exc.media_message, status=exc.status)
    # Rendered, not redirected: the link exists in this answer only (the session cookie is only signed).
    shown = {"email": invitation.email, "role": invitation.role, "url": url}
    return await render_team_page(request, team_ref, invited=shown, status=201)


@router.post("/invitations/{invitation_id}/revoke")
async def revoke_invitation(request: Request, invitation_id: str) -> Response:
    service = people(request)
    found = await service.invitation(invitation_id[:64])
    await service.revoke_invitation(found.id)
    flash(request, f"Revoked the invitation of {found.email}.")
    return back(request, f"/admin/teams/{found.team_id}")
