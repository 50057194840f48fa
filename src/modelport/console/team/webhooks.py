"""Webhook secret: masked on the page; shown in full only in the answer to an explicit POST (show, rotate)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.auth import AuthContext
from modelport.accounts.permissions import Permission
from modelport.clock import now_ms
from modelport.console.deps import console_actor, team_with
from modelport.console.templating import render
from modelport.web.deps import get_services
from modelport.webhooks import secrets as team_secrets

router = APIRouter()
_media = team_with(Permission.USE_MEDIA)  # the tasks' webhooks: developers and up


def masked(secret: str) -> str:
    return f"whsec_…{secret[-4:]}"


async def _page(request: Request, found: team_secrets.TeamSecrets, *, shown: str | None, rotated: bool) -> Response:
    now = now_ms()
    previous_valid = found.previous_until_ms is not None and found.previous_until_ms > now
    context = {
        "title": "Webhook secret",
        "active": "webhooks",
        "masked": masked(found.secret),
        "created_at_ms": found.created_at_ms,
        "previous_until_ms": found.previous_until_ms if previous_valid else None,
        "shown": shown,
        "rotated": rotated,
        "grace_hours": get_services(request).settings.webhooks.previous_secret_seconds // 3600,
    }
    return render(request, "team/webhooks.html", context)


@router.get("/webhooks")
async def webhooks_page(request: Request, auth: AuthContext = Depends(_media)) -> Response:
    services = get_services(request)
    found = await team_secrets.get_or_create(services.db, team_secrets.box_of(services), auth.team_id)
    return await _page(request, found, shown=None, rotated=False)


@router.post("/webhooks/reveal")
async def reveal(request: Request, auth: AuthContext = Depends(_media)) -> Response:
    services = get_services(request)
    found = await team_secrets.get_or_create(services.db, team_secrets.box_of(services), auth.team_id)
    return await _page(request, found, shown=found.secret, rotated=False)


@router.post("/webhooks/rotate")
async def rotate(request: Request, auth: AuthContext = Depends(_media)) -> Response:
    services = get_services(request)
    grace_ms = services.settings.webhooks.previous_secret_seconds * 1000
    actor = console_actor(request, auth)
    rotated = await team_secrets.rotate(
        services.db, team_secrets.box_of(services), auth.team_id, previous_valid_ms=grace_ms, actor=actor
    )
    return await _page(request, rotated, shown=rotated.secret, rotated=True)
