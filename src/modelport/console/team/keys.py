"""API keys: list (name, prefix, role, limits, spend against the limit, created, last used, status), create
with limits (the key shown once), edit a key's limits, revoke. Only for sessions whose key may manage keys
(`accounts.permissions`, the keys API's rule). A key never gives more than it has (`accounts.grants`): the
session's key may create or leave behind only keys within its own limits and role."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from modelport.accounts.auth import AuthContext
from modelport.accounts.grants import check_grant
from modelport.accounts.key_fields import check_key_fields
from modelport.accounts.models import ApiKey, CreatedKey
from modelport.accounts.permissions import Permission
from modelport.accounts.service import create_key, get_key, list_keys, revoke_key, update_key
from modelport.billing.key_budget import key_spend_view
from modelport.console.deps import team_with
from modelport.console.key_forms import form_values, key_form_fields
from modelport.console.templating import console_root, render
from modelport.errors import InvalidParameters, NotFound
from modelport.web.actor import request_actor
from modelport.web.deps import get_services

router = APIRouter()
# Every page and form here, as the keys API: only keys whose role may manage keys (admin keys).
_manager = team_with(Permission.MANAGE_KEYS)

MAX_NAME = 100


async def _page(
    request: Request, auth: AuthContext, *, created: CreatedKey | None = None, status: int = 200
) -> Response:
    engine = get_services(request).db
    keys = await list_keys(engine, auth.team_id)
    ordered = sorted(keys, key=lambda k: (not k.active, -k.created_at_ms))
    spend = {k.id: await key_spend_view(engine, k.id, k.limits) for k in ordered if k.active}
    context = {
        "title": "API keys",
        "active": "keys",
        "keys": ordered,
        "created": created,
        "spend": spend,
        "forms": {k.id: form_values(k) for k in ordered},
    }
    return render(request, "team/keys.html", context, status=status)


@router.get("/keys")
async def keys_page(request: Request, auth: AuthContext = Depends(_manager)) -> Response:
    return await _page(request, auth)


@router.post("/keys")
async def create(request: Request, auth: AuthContext = Depends(_manager)) -> Response:
    fields = await key_form_fields(request)
    name = fields.pop("name", None) or ""
    if len(name) > MAX_NAME:
        raise InvalidParameters(f"a key name is at most {MAX_NAME} characters", param="name")
    check_grant(auth, check_key_fields(fields))
    actor = request_actor(request, "team_console", key_id=auth.key_id)
    created = await create_key(get_services(request).db, auth.team_id, name=name or None, fields=fields, actor=actor)
    # Rendered, not redirected: the key exists in this response only and is never stored.
    return await _page(request, auth, created=created, status=201)


async def _team_key(request: Request, auth: AuthContext, key_id: str) -> ApiKey:
    try:
        key = await get_key(get_services(request).db, key_id)
    except NotFound:
        key = None
    if key is None or key.team_id != auth.team_id:
        raise NotFound(f"no key {key_id[:64]!r}")  # another team's key looks the same as none
    return key


@router.post("/keys/{key_id}/edit")
async def edit(request: Request, key_id: str, auth: AuthContext = Depends(_manager)) -> Response:
    services = get_services(request)
    key = await _team_key(request, auth, key_id)
    fields = await key_form_fields(request)
    check_grant(auth, check_key_fields(fields), key)
    await update_key(services.db, key.id, fields, actor=request_actor(request, "team_console", key_id=auth.key_id))
    services.auth.evict_all()  # this process at once; the others within auth_cache_seconds
    return RedirectResponse(f"{console_root(request)}/keys", status_code=303)


@router.post("/keys/{key_id}/revoke")
async def revoke(request: Request, key_id: str, auth: AuthContext = Depends(_manager)) -> Response:
    services = get_services(request)
    key = await _team_key(request, auth, key_id)
    await revoke_key(services.db, key.id, actor=request_actor(request, "team_console", key_id=auth.key_id))
    services.auth.evict_all()  # this process at once; the others within auth_cache_seconds
    return RedirectResponse(f"{console_root(request)}/keys", status_code=303)
