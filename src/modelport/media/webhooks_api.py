"""The team's webhook signing secret.

- `GET  /api/v1/webhooks/secret`         the current secret (made on first use)
- `POST /api/v1/webhooks/secret/rotate`  a new secret; the previous one keeps signing for 24 hours
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.auth import AuthContext
from modelport.clock import now_ms
from modelport.web.actor import request_actor
from modelport.web.deps import get_services, media_auth
from modelport.web.envelope import ok
from modelport.webhooks import secrets as team_secrets

router = APIRouter(prefix="/api/v1/webhooks", tags=["webhooks"])


def _view(found: team_secrets.TeamSecrets) -> dict[str, Any]:
    previous_valid = found.previous_until_ms is not None and found.previous_until_ms > now_ms()
    return {
        "secret": found.secret,
        "created_at": found.created_at_ms,
        "previous_secret_expires_at": found.previous_until_ms if previous_valid else None,
    }


@router.get("/secret", summary="The team's webhook signing secret")
async def get_secret(request: Request, auth: AuthContext = Depends(media_auth)) -> Response:
    services = get_services(request)
    return ok(_view(await team_secrets.get_or_create(services.db, team_secrets.box_of(services), auth.team_id)))


@router.post("/secret/rotate", summary="Rotate the team's webhook signing secret")
async def rotate_secret(request: Request, auth: AuthContext = Depends(media_auth)) -> Response:
    services = get_services(request)
    rotated = await team_secrets.rotate(
        services.db,
        team_secrets.box_of(services),
        auth.team_id,
        previous_valid_ms=services.settings.webhooks.previous_secret_seconds * 1000,
        actor=request_actor(request, "team_key", key_id=auth.key_id),
    )
    return ok(_view(rotated))
