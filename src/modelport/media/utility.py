"""Media host utility endpoints: model list, key validation, team balance."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.auth import AuthContext
from modelport.accounts.limits import NO_LIMITS
from modelport.accounts.service import get_team
from modelport.billing.key_budget import key_spend_view
from modelport.catalog_spec import LISTED_BY_DEFAULT, MediaModel
from modelport.errors import InvalidParameters
from modelport.web.deps import get_services, media_auth
from modelport.web.envelope import ok
from modelport.web.key_rate import key_rates_left

router = APIRouter(prefix="/api/v1", tags=["utility"])


def media_model_entry(model: MediaModel, public_base: str) -> dict[str, Any]:
    docs_url = model.docs_url if "://" in model.docs_url else public_base + "/" + model.docs_url.lstrip("/")
    return {"slug": model.slug, "type": model.type, "docs_url": docs_url, "description": model.description}


MODEL_TYPES = (*sorted(LISTED_BY_DEFAULT), "text-to-speech")


@router.get(
    "/models",
    summary="List active published media models",
    description="Without `type`: the models of the five generation types (image and video). Speech models "
    "(`text-to-speech`) are listed only when asked for with `?type=text-to-speech`.",
)
async def list_media_models(
    request: Request,
    auth: AuthContext = Depends(media_auth),
    model_type: str | None = Query(
        None, alias="type", description="Only models of this type: " + ", ".join(MODEL_TYPES)
    ),
) -> Response:
    if model_type is not None and model_type not in MODEL_TYPES:
        raise InvalidParameters("type must be one of " + ", ".join(MODEL_TYPES), param="type")
    services = get_services(request)
    snapshot = await services.catalog.get()
    base = services.settings.effective_public_media_url
    models = [
        media_model_entry(m, base)
        for m in snapshot.media.values()
        if m.active
        and m.published
        and auth.may_use(m.slug)
        and (m.type == model_type if model_type is not None else m.type in LISTED_BY_DEFAULT)
    ]
    return ok({"models": models, "total": len(models)})


@router.get(
    "/apikey/validate",
    summary="Tell whether the API key is valid and active, with its limits and its spend in the current period",
)
async def validate_key(request: Request, auth: AuthContext = Depends(media_auth)) -> Response:
    return ok(
        {
            "valid": True,
            "active": True,
            "key_id": auth.key_id,
            "key_prefix": auth.key_prefix,
            "team": {"id": auth.team_id, "name": auth.team_name},
            "role": auth.role,
            "limits": (auth.limits or NO_LIMITS).to_public(),
            "spend": await key_spend_view(get_services(request).db, auth.key_id, auth.limits),
            "rate_remaining": await key_rates_left(get_services(request), auth),
        }
    )


@router.get("/team/balance", summary="The team's balance in USD")
async def team_balance(request: Request, auth: AuthContext = Depends(media_auth)) -> Response:
    team = await get_team(get_services(request).db, auth.team_id)
    return ok(
        {
            "team_id": team.id,
            "currency": "USD",
            "available_balance": team.available_usd,
            "frozen_balance": team.frozen_usd,
        }
    )
