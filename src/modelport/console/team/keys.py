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
from modelport.accounts.permissions import REFUSAL, Permission, allows
from modelport.accounts.service import create_key, get_key, list_keys, revoke_key, update_key
from modelport.billing.key_budget import key_spend_view
from modelport.console.deps import console_actor, team_with
from modelport.console.key_forms import form_values, key_form_fields
from modelport.console.templating import console_root, render
from modelport.errors import Forbidden, InvalidParameters, NotFound
from modelport.web.deps import get_services

router = APIRouter()
# Owners and admins (and admin-key sessions) manage every key of the team; developers signed in as
# themselves manage their own personal keys only (always `role: member`, as `accounts.grants` holds them).
_manager = team_with(Permission.MANAGE_OWN_KEYS)


def _all_keys(auth: AuthContext) -> bool:
    """Whether the session manages every key of the team (else only the person's own)."""
    if allows(auth.team_role, Permission.MANAGE_KEYS):
        return True
    if auth.user_id is None:  # a member key's session has no keys of its own
        raise Forbidden(REFUSAL)
    return False


MAX_NAME = 100


async def _page(
    request: Request, auth: AuthContext, *, created: CreatedKey | None = None, status: int = 200
) -> Response:
    engine = get_services(request).db
    keys = await list_keys(engine, auth.team_id)
    if not _all_keys(auth):
        keys = [k for k in keys if k.owner_user_id == auth.user_id]
    ordered = sorted(keys, key=lambda k: (not k.active, -k.created_at_ms))
    spend = {k.id: await key_spend_view(engine, k.id, k.limits) for k in ordered if k.active}
    context = {
        "title": "API keys",
        "active": "keys",
        "keys": ordered,
        "created": created,
        "spend": spend,
        "forms": {k.id: form_values(k) for k in ordered},
        "may_team_key": auth.user_id is not None and allows(auth.team_role, Permission.MANAGE_KEYS),
    }
    return render(request, "team/keys.html", context, status=status)


@router.get("/keys")
async def keys_page(request: Request, auth: AuthContext = Depends(_manager)) -> Response:
    return await _page(request, auth)


@router.post("/keys")
async def create(request: Request, auth: AuthContext = Depends(_manager)) -> Response:
    team_key = (await request.form()).get("team_key") == "on"
    all_keys = _all_keys(auth)
    fields = await key_form_fields(request)
    name = fields.pop("name", None) or ""
    if len(name) > MAX_NAME:
        raise InvalidParameters(f"a key name is at most {MAX_NAME} characters", param="name")
    check_grant(auth, check_key_fields(fields))
    actor = console_actor(request, auth)
    # A person's key is theirs unless an owner or admin marks it a team key; a key session's is the team's.
    owner = None if auth.user_id is None or (team_key and all_keys) else auth.user_id
    created = await create_key(
        get_services(request).db,
        auth.team_id,
        name=name or None,
        fields=fields,
        actor=actor,
        created_by=auth.user_id,
        owner_user_id=owner,
    )
    # Rendered, not redirected: the key exists in this response only and is never stored.
    return await _page(request, auth, created=created, status=201)


async def _team_key(request: Request, auth: AuthContext, key_id: str) -> ApiKey:
    try:
        key = await get_key(get_services(request).db, key_id)
    except NotFound:
        key = None
    if key is None or key.team_id != auth.team_id:
        raise NotFound(f"no key {key_id[:64]!r}")  # another team's key looks the same as none
    if not _all_keys(auth) and key.owner_user_id != auth.user_id:
        raise Forbidden(REFUSAL)
    return key


@router.post("/keys/{key_id}/edit")
async def edit(request: Request, key_id: str, auth: AuthContext = Depends(_manager)) -> Response:
    services = get_services(request)
    key = await _team_key(request, auth, key_id)
    fields = await key_form_fields(request)
    check_grant(auth, check_key_fields(fields), key)
    await update_key(services.db, key.id, fields, actor=console_actor(request, auth))
    services.auth.evict_all()  # this process at once; the others within auth_cache_seconds
    return RedirectResponse(f"{console_root(request)}/keys", status_code=303)


@router.post("/keys/{key_id}/revoke")
async def revoke(request: Request, key_id: str, auth: AuthContext = Depends(_manager)) -> Response:
    services = get_services(request)
    key = await _team_key(request, auth, key_id)
    await revoke_key(services.db, key.id, actor=console_actor(request, auth))
    services.auth.evict_all()  # this process at once; the others within auth_cache_seconds
    return RedirectResponse(f"{console_root(request)}/keys", status_code=303)
