"""The operator's people routes on the admin API (`/admin/v1/users`, team members and invitations), through
`operator.people.People` like the CLI and the operator console. Admin token only (audited as
`operator_token`); shapes in docs/api/accounts.md."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import Response

from modelport.operator.people import People
from modelport.web.actor import request_actor
from modelport.web.deps import get_services, operator_auth
from modelport.web.envelope import ok

router = APIRouter(prefix="/admin/v1", tags=["admin"], dependencies=[Depends(operator_auth)])


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class UserCreate(_Body):
    email: str
    name: str | None = None
    operator_role: str | None = None
    team: str | None = None
    role: str | None = None


class UserPatch(_Body):
    name: Any = None
    status: Any = None
    operator_role: Any = None

    def given(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.model_fields_set}


class MemberAdd(_Body):
    email: str
    role: str


class RoleSet(_Body):
    role: str


class InvitationCreate(_Body):
    email: str
    role: str


def _people(request: Request) -> People:
    return People.for_services(get_services(request), request_actor(request, "operator_token"))


@router.post("/users")
async def create_user(request: Request, body: UserCreate) -> Response:
    user, url, expires_ms = await _people(request).create_user(
        body.email, name=body.name, operator_role=body.operator_role, team=body.team, role=body.role
    )
    return ok({**user.to_public(), "setup_url": url, "setup_expires_at": expires_ms // 1000})


@router.get("/users")
async def list_users(request: Request) -> Response:
    return ok({"users": [u.to_public() for u in await _people(request).users()]})


@router.get("/users/{user_id}")
async def show_user(request: Request, user_id: str) -> Response:
    return ok((await _people(request).user(user_id)).to_public())


@router.patch("/users/{user_id}")
async def patch_user(request: Request, user_id: str, body: UserPatch) -> Response:
    return ok((await _people(request).update_user(user_id, body.given())).to_public())


@router.post("/users/{user_id}/reset-link")
async def reset_link(request: Request, user_id: str) -> Response:
    url, link = await _people(request).reset_link(user_id)
    return ok({"url": url, "expires_at": link.expires_at_ms // 1000})


@router.get("/teams/{team}/members")
async def list_members(request: Request, team: str) -> Response:
    return ok({"members": [m.to_public() for m in await _people(request).members(team)]})


@router.post("/teams/{team}/members")
async def add_member(request: Request, team: str, body: MemberAdd) -> Response:
    return ok((await _people(request).add_member(team, body.email, body.role)).to_public())


@router.patch("/teams/{team}/members/{user_id}")
async def set_role(request: Request, team: str, user_id: str, body: RoleSet) -> Response:
    return ok((await _people(request).set_role(team, user_id, body.role)).to_public())


@router.delete("/teams/{team}/members/{user_id}")
async def remove_member(request: Request, team: str, user_id: str) -> Response:
    return ok({**(await _people(request).remove_member(team, user_id)).to_public(), "removed": True})


@router.get("/teams/{team}/invitations")
async def list_invitations(request: Request, team: str) -> Response:
    return ok({"invitations": [i.to_public() for i in await _people(request).invitations(team)]})


@router.post("/teams/{team}/invitations")
async def invite(request: Request, team: str, body: InvitationCreate) -> Response:
    invitation, url = await _people(request).invite(team, body.email, body.role)
    return ok(invitation.to_public(url))


@router.delete("/invitations/{invitation_id}")
async def revoke_invitation(request: Request, invitation_id: str) -> Response:
    return ok((await _people(request).revoke_invitation(invitation_id)).to_public())
