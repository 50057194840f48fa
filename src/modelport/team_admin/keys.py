"""The team keys API on the media host: keys with `role: admin` manage their team's keys.

`GET /api/v1/keys` (paged), `POST /api/v1/keys` (the secret shown once), `GET/PATCH/DELETE
/api/v1/keys/{key_id}`, in the media envelope. A member key gets 403. A key never gives more than it has:
a key it creates or edits (itself included) must end with limits no looser and a role no higher than its
own (`accounts.limits.within`), else 403 naming the field. Another team's key is a 404. DELETE revokes.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.auth import AuthContext
from modelport.accounts.grants import check_grant
from modelport.accounts.key_fields import check_key_fields
from modelport.accounts.models import ApiKey
from modelport.accounts.permissions import Permission
from modelport.billing.key_budget import key_spend_view
from modelport.errors import InvalidParameters, NotFound
from modelport.operator.verbs import Operator
from modelport.team_admin.body import json_body
from modelport.web.actor import request_actor
from modelport.web.deps import get_services, media_auth_with
from modelport.web.envelope import ok

router = APIRouter(prefix="/api/v1/keys", tags=["keys"])
MAX_PAGE_SIZE = 100
_NULLABLE = {"nullable": True}
_FIELDS_BODY = {
    "requestBody": {
        "required": False,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "description": "A key's fields (docs/api/keys.md); on PATCH, null clears a limit",
                    "additionalProperties": False,
                    "properties": {
                        "name": {"type": "string", "maxLength": 100, **_NULLABLE},
                        "spend_limit_usd": {"type": "number", "minimum": 0, **_NULLABLE},
                        "spend_limit_period": {"type": "string", "enum": ["day", "week", "month", "total"]},
                        "models": {"type": "array", "items": {"type": "string"}, **_NULLABLE},
                        "rpm": {"type": "integer", "minimum": 1, **_NULLABLE},
                        "tpm": {"type": "integer", "minimum": 1, **_NULLABLE},
                        "expires_at": {"type": "integer", "description": "Unix seconds", **_NULLABLE},
                        "allowed_ips": {"type": "array", "items": {"type": "string"}, **_NULLABLE},
                        "role": {"type": "string", "enum": ["member", "admin"]},
                    },
                }
            }
        },
    }
}


admin_key = media_auth_with(Permission.MANAGE_KEYS)


def _operator(request: Request, auth: AuthContext) -> Operator:
    return Operator.for_services(get_services(request), request_actor(request, "team_key", key_id=auth.key_id))


async def _team_key(request: Request, auth: AuthContext, key_id: str) -> ApiKey:
    try:
        record = await _operator(request, auth).key(key_id)
    except NotFound:
        record = None
    if record is None or record.team_id != auth.team_id:
        raise NotFound(f"no key {key_id!r}")  # another team's key looks the same as none
    return record


def _fields(body: Any) -> dict[str, Any]:
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise InvalidParameters("the request body must be a JSON object", param="body")
    return body


async def _view(request: Request, record: ApiKey) -> dict[str, Any]:
    spend = await key_spend_view(get_services(request).db, record.id, record.limits)
    return {**record.to_public(), "spend": spend}


@router.get("", summary="List the team's API keys (admin keys only)")
async def list_keys(
    request: Request,
    auth: AuthContext = Depends(admin_key),
    page: int = Query(1, ge=1, le=1_000_000),
    page_size: int = Query(20, ge=1, le=MAX_PAGE_SIZE),
) -> Response:
    keys = list(await _operator(request, auth).list_keys(auth.team_id))
    shown = keys[(page - 1) * page_size : page * page_size]
    return ok(
        {
            "keys": [await _view(request, k) for k in shown],
            "total": len(keys),
            "page": page,
            "page_size": page_size,
        }
    )


@router.post(
    "", summary="Create a key of the team (admin keys only; the secret is shown once)", openapi_extra=_FIELDS_BODY
)
async def create_key(request: Request, auth: AuthContext = Depends(admin_key)) -> Response:
    fields = _fields(await json_body(request))
    check_grant(auth, check_key_fields(fields), None)
    created = await _operator(request, auth).create_key(auth.team_id, fields=fields)
    return ok({"key": created.key, **(await _view(request, created.record))})


@router.get("/{key_id}", summary="One key of the team (admin keys only)")
async def show_key(request: Request, key_id: str, auth: AuthContext = Depends(admin_key)) -> Response:
    return ok(await _view(request, await _team_key(request, auth, key_id)))


@router.patch("/{key_id}", summary="Change a key's name, limits or role (admin keys only)", openapi_extra=_FIELDS_BODY)
async def update_key(request: Request, key_id: str, auth: AuthContext = Depends(admin_key)) -> Response:
    record = await _team_key(request, auth, key_id)
    fields = _fields(await json_body(request))
    check_grant(auth, check_key_fields(fields), record)
    return ok(await _view(request, await _operator(request, auth).update_key(record.id, fields)))


@router.delete("/{key_id}", summary="Revoke a key of the team (admin keys only)")
async def revoke_key(request: Request, key_id: str, auth: AuthContext = Depends(admin_key)) -> Response:
    record = await _team_key(request, auth, key_id)
    return ok(await _view(request, await _operator(request, auth).revoke_key(record.id)))
