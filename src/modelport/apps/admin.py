"""The admin JSON API (`/admin/v1/...` on the media host), guarded by MODELPORT_ADMIN_TOKEN.

Same verbs as `modelport admin ...`; responses use the media envelope. With no admin token configured
every admin route is a 404.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import select
from starlette.requests import Request
from starlette.responses import Response

from modelport import catalog as catalog_ops
from modelport.accounts import service as accounts
from modelport.billing.topups import topup_team
from modelport.errors import InvalidParameters
from modelport.money import display_usd
from modelport.storage.tables import ledger_entries
from modelport.web.deps import admin_auth, get_services
from modelport.web.envelope import ok

router = APIRouter(prefix="/admin/v1", tags=["admin"], dependencies=[Depends(admin_auth)])


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        # PostgreSQL rejects NUL in text: refuse it here (400) rather than fail in the database (500).
        if isinstance(value, str) and "\x00" in value:
            raise ValueError("must not contain a NUL character")
        return value


class TeamCreate(_Body):
    name: str


class TeamPatch(_Body):
    asset_service: bool | None = None
    log_retention: bool | None = None


class KeyCreate(_Body):
    name: str | None = Field(default=None, max_length=100)


class Topup(_Body):
    amount_usd: Decimal = Field(gt=0)


class TierSet(_Body):
    tier: str


class ModelPut(_Body):
    kind: Literal["text", "media"]
    spec: dict[str, Any]


def _check_tier(request: Request, tier: str) -> None:
    names = [t.name for t in get_services(request).settings.tiers]
    if tier not in names:
        raise InvalidParameters(f"unknown tier {tier!r}; tiers: {', '.join(names)}", param="tier")


@router.get("/teams")
async def list_teams(request: Request) -> Response:
    teams = await accounts.list_teams(get_services(request).db)
    return ok({"teams": [t.to_public() for t in teams]})


@router.post("/teams")
async def create_team(request: Request, body: TeamCreate) -> Response:
    services = get_services(request)
    team = await accounts.create_team(services.db, body.name, tier=services.settings.tiers[0].name)
    return ok(team.to_public())


@router.get("/teams/{team}")
async def show_team(request: Request, team: str) -> Response:
    return ok((await accounts.get_team(get_services(request).db, team)).to_public())


@router.patch("/teams/{team}")
async def patch_team(request: Request, team: str, body: TeamPatch) -> Response:
    services = get_services(request)
    changes = body.model_dump(exclude_none=True)
    updated = await accounts.update_team(services.db, team, **changes)
    services.auth.evict_all()
    return ok(updated.to_public())


@router.put("/teams/{team}/tier")
async def set_tier(request: Request, team: str, body: TierSet) -> Response:
    services = get_services(request)
    _check_tier(request, body.tier)
    updated = await accounts.update_team(services.db, team, tier=body.tier)
    services.auth.evict_all()
    return ok(updated.to_public())


@router.post("/teams/{team}/topups")
async def topup(request: Request, team: str, body: Topup) -> Response:
    services = get_services(request)
    result = await topup_team(services.db, services.settings.tiers, team, body.amount_usd)
    services.auth.evict_all()
    return ok(
        {
            "team": result.team.to_public(),
            "amount_usd": display_usd(result.amount_micros),
            "tier_changed": result.tier_changed,
        }
    )


@router.get("/teams/{team}/ledger")
async def ledger(request: Request, team: str, limit: int = 100) -> Response:
    services = get_services(request)
    found = await accounts.get_team(services.db, team)
    limit = max(1, min(limit, 1000))
    stmt = (
        select(ledger_entries)
        .where(ledger_entries.c.team_id == found.id)
        .order_by(ledger_entries.c.id.desc())
        .limit(limit)
    )
    async with services.db.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    entries = [
        {
            "id": r.id,
            "kind": r.kind,
            "amount_usd": display_usd(r.amount_micros),
            "amount_micros": r.amount_micros,
            "ref": r.ref,
            "note": r.note,
            "created_at": r.created_at_ms // 1000,
        }
        for r in rows
    ]
    return ok({"entries": entries})


@router.post("/teams/{team}/keys")
async def create_key(request: Request, team: str, body: KeyCreate | None = None) -> Response:
    created = await accounts.create_key(get_services(request).db, team, name=body.name if body else None)
    return ok(
        {
            "key": created.key,
            "id": created.record.id,
            "team": created.record.team_id,
            **{k: v for k, v in created.record.to_public().items() if k not in {"id"}},
        }
    )


@router.get("/teams/{team}/keys")
async def list_keys(request: Request, team: str) -> Response:
    keys = await accounts.list_keys(get_services(request).db, team)
    return ok({"keys": [k.to_public() for k in keys]})


@router.post("/keys/{key_id}/revoke")
async def revoke_key(request: Request, key_id: str) -> Response:
    services = get_services(request)
    record = await accounts.revoke_key(services.db, key_id)
    services.auth.evict_all()
    return ok(record.to_public())


@router.get("/models")
async def list_models(request: Request) -> Response:
    services = get_services(request)
    await services.catalog.reload()
    snapshot = await services.catalog.get()
    return ok(
        {
            "text_models": [m.model_dump(mode="json") for m in snapshot.text.values()],
            "media_models": [m.model_dump(mode="json") for m in snapshot.media],
        }
    )


@router.put("/models/{slug:path}")
async def put_model(request: Request, slug: str, body: ModelPut) -> Response:
    services = get_services(request)
    key = "id" if body.kind == "text" else "slug"
    spec = {**body.spec, key: slug}
    entry = await catalog_ops.put_model(services.db, body.kind, spec)
    await services.catalog.reload()
    return ok(entry.model_dump(mode="json"))


@router.delete("/models/{slug:path}")
async def delete_model(request: Request, slug: str) -> Response:
    services = get_services(request)
    await catalog_ops.delete_model(services.db, slug)
    await services.catalog.reload()
    return ok({"deleted": slug})
