"""API keys: list (name, prefix, created, last used, status), create (the key shown once), revoke."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from modelport.accounts.auth import AuthContext
from modelport.accounts.models import CreatedKey
from modelport.accounts.service import create_key, get_key, list_keys, revoke_key
from modelport.console.deps import require_team
from modelport.console.templating import console_root, render
from modelport.errors import InvalidParameters, NotFound
from modelport.web.deps import get_services

router = APIRouter()

MAX_NAME = 100


async def _page(
    request: Request, auth: AuthContext, *, created: CreatedKey | None = None, status: int = 200
) -> Response:
    keys = await list_keys(get_services(request).db, auth.team_id)
    ordered = sorted(keys, key=lambda k: (not k.active, -k.created_at_ms))
    context = {"title": "API keys", "active": "keys", "keys": ordered, "created": created}
    return render(request, "team/keys.html", context, status=status)


@router.get("/keys")
async def keys_page(request: Request, auth: AuthContext = Depends(require_team)) -> Response:
    return await _page(request, auth)


@router.post("/keys")
async def create(request: Request, auth: AuthContext = Depends(require_team)) -> Response:
    form = await request.form()
    raw = form.get("name")
    name = raw.strip() if isinstance(raw, str) else ""
    if len(name) > MAX_NAME:
        raise InvalidParameters(f"a key name is at most {MAX_NAME} characters", param="name")
    created = await create_key(get_services(request).db, auth.team_id, name=name or None)
    # Rendered, not redirected: the key exists in this response only and is never stored.
    return await _page(request, auth, created=created, status=201)


@router.post("/keys/{key_id}/revoke")
async def revoke(request: Request, key_id: str, auth: AuthContext = Depends(require_team)) -> Response:
    services = get_services(request)
    try:
        key = await get_key(services.db, key_id)
    except NotFound:
        key = None
    if key is None or key.team_id != auth.team_id:
        raise NotFound(f"no key {key_id[:64]!r}")  # another team's key looks the same as none
    await revoke_key(services.db, key.id)
    services.auth.evict_all()  # this process at once; the others within auth_cache_seconds
    return RedirectResponse(f"{console_root(request)}/keys", status_code=303)
