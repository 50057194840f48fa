"""HTTP routes of provider assets.

- `POST   /api/v1/media/providers/{provider}/assets`             register a URL (spec: Register provider asset)
- `GET    /api/v1/media/providers/{provider}/assets/{asset_id}`  one asset, now (poll processing → active)
- `GET    /api/v1/media/providers/{provider}/assets`             the team's assets, newest first
- `DELETE /api/v1/media/providers/{provider}/assets/{asset_id}`  remove an asset
"""

from __future__ import annotations

import hashlib
from typing import Any

from fastapi import APIRouter, Depends, Query
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.auth import AuthContext
from modelport.media import idempotency
from modelport.media.assets.service import ASSETS
from modelport.web.body import read_body
from modelport.web.deps import get_services, media_auth
from modelport.web.envelope import ok

router = APIRouter(tags=["provider assets"])
PREFIX = "/api/v1/media/providers/{provider}/assets"
MAX_BODY_BYTES = 64 * 1024

_REGISTER_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["url", "type"],
                    "properties": {
                        "url": {"type": "string", "format": "uri", "maxLength": 2048},
                        "type": {"type": "string", "enum": ["image", "video", "audio"]},
                        "name": {"type": "string", "maxLength": 64},
                    },
                }
            }
        },
    },
    "parameters": [
        {
            "name": "Idempotency-Key",
            "in": "header",
            "required": False,
            "schema": {"type": "string", "minLength": 1, "maxLength": 255},
            "description": (
                "The same key with the same body within 24 h answers the first asset again"
                " (`Idempotent-Replayed: true`); with another body, 409"
            ),
        }
    ],
}


@router.post(PREFIX, summary="Register a media URL with the provider's asset library", openapi_extra=_REGISTER_BODY)
async def register_asset(request: Request, provider: str, auth: AuthContext = Depends(media_auth)) -> Response:
    services = get_services(request)
    service = services[ASSETS]
    key = idempotency.key_of(request.headers.get(idempotency.HEADER))
    body = await _small_body(request)
    if key is None:
        return ok(await service.register(auth.team_id, provider, body))
    print_ = idempotency.fingerprint("POST", request.url.path, hashlib.sha256(body).hexdigest())
    return await idempotency.once(
        services[idempotency.IDEMPOTENCY_KEYS],
        auth.team_id,
        key,
        print_,
        lambda: service.register(auth.team_id, provider, body),
    )


async def _small_body(request: Request) -> bytes:
    """The JSON body, refused past MAX_BODY_BYTES without reading the rest (a URL and a name need little)."""
    return await read_body(request, MAX_BODY_BYTES)


@router.get(PREFIX + "/{asset_id}", summary="One asset of the team, with its current status")
async def get_asset(
    request: Request, provider: str, asset_id: str, auth: AuthContext = Depends(media_auth)
) -> Response:
    return ok(await get_services(request)[ASSETS].get(auth.team_id, provider, asset_id))


@router.get(PREFIX, summary="The team's assets, newest first")
async def list_assets(
    request: Request,
    provider: str,
    limit: int = Query(20, ge=1, le=100),
    offset: int = Query(0, ge=0, le=1_000_000),
    status: str | None = None,
    auth: AuthContext = Depends(media_auth),
) -> Response:
    service = get_services(request)[ASSETS]
    return ok(await service.list_page(auth.team_id, provider, limit=limit, offset=offset, status=status))


@router.delete(PREFIX + "/{asset_id}", summary="Delete one of the team's assets")
async def delete_asset(
    request: Request, provider: str, asset_id: str, auth: AuthContext = Depends(media_auth)
) -> Response:
    return ok(await get_services(request)[ASSETS].delete(auth.team_id, provider, asset_id))
