"""The operator's users page (`/console/admin/users`): every account, its teams and operator role; create one
(its setup link shown once), rename, disable or enable, change the operator role, make a reset link (shown once).
Through `operator.people.People`, as the admin API's `/admin/v1/users` and the CLI's `admin user`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.permissions import OPERATOR_ROLES, TEAM_ROLES
from modelport.console.deps import require_operator
from modelport.console.operator.common import back, flash, form_fields, page, people

router = APIRouter(prefix="/admin", dependencies=[Depends(require_operator)])


async def _page(request: Request, *, shown: dict[str, Any] | None = None, status: int = 200) -> Response:
    context = {
        "title": "Users",
        "active": "users",
        "users": await people(request).users(),
        "operator_roles": OPERATOR_ROLES,
        "team_roles": TEAM_ROLES,
        "shown": shown,
    }
    return page(request, "operator/users.html", context, status=status)


@router.get("/users")
async def users_page(request: Request) -> Response:
    return await _page(request)


@router.post("/users")
async def create_user(request: Request) -> Response:
    fields = await form_fields(request)
    user, url, _ = await people(request).create_user(
        fields.get("email", ""),
        name=fields.get("name") or None,
        operator_role=fields.get("operator_role") or None,
        team=fields.get("team") or None,
        role=fields.get("role") or None,
    )
    # Rendered, not redirected: the link exists in this answer only (the session cookie is only signed).
    return await _page(request, shown={"email": user.email, "url": url, "what": "Setup link"}, status=201)


@router.post("/users/{user_id}/name")
async def set_name(request: Request, user_id: str) -> Response:
    fields = await form_fields(request)
    user = await people(request).update_user(user_id[:64], {"name": fields.get("name") or None})
    flash(request, f"{user.email}'s name is now {user.name or 'empty'}")
    return back(request, "/admin/users")


@router.post("/users/{user_id}/status")
async def set_status(request: Request, user_id: str) -> Response:
    fields = await form_fields(request)
    user = await people(request).update_user(user_id[:64], {"status": fields.get("status", "")})
    flash(request, f"{user.email} is now {user.status}")
    return back(request, "/admin/users")


@router.post("/users/{user_id}/operator-role")
async def set_operator_role(request: Request, user_id: str) -> Response:
    fields = await form_fields(request)
    user = await people(request).update_user(user_id[:64], {"operator_role": fields.get("operator_role") or None})
    flash(request, f"{user.email}'s operator role is now {user.operator_role or 'none'}")
    return back(request, "/admin/users")


@router.post("/users/{user_id}/reset-link")
async def reset_link(request: Request, user_id: str) -> Response:
    service = people(request)
    user = await service.user(user_id[:64])
    url, _ = await service.reset_link(user.id)
    return await _page(request, shown={"email": user.email, "url": url, "what": "Reset link"}, status=201)
