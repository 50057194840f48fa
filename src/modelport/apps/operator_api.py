"""The operator's JSON API (public path `/admin/v1/...` on the media host), guarded by MODELPORT_ADMIN_TOKEN.

Same verbs as `modelport admin ...` and the operator console, all through `operator.verbs.Operator`;
responses use the media envelope. With no admin token configured
every operator route is a 404.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from decimal import Decimal
from typing import Any, Literal
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.requests import Request
from starlette.responses import Response

from modelport.alerts.views import overview as alert_overview
from modelport.errors import InvalidParameters
from modelport.gateway.health_view import deployment_states
from modelport.gateway.probes import PROBES
from modelport.money import display_usd
from modelport.operator.verbs import Operator
from modelport.retention.stats import read_figures
from modelport.upstreams.health import DEPLOYMENT_HEALTH
from modelport.web.actor import request_actor
from modelport.web.deps import get_services, operator_auth
from modelport.web.envelope import ok

router = APIRouter(prefix="/admin/v1", tags=["admin"], dependencies=[Depends(operator_auth)])


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
    # The team's request-log window in days (fractions allowed; 0: forever; null: the deployment's default).
    log_days: float | None = None
    # The response cache: off | team | key (docs/api/cache.md), and whether answers with tool calls are stored.
    cache: str | None = None
    cache_tool_calls: bool | None = None


class KeyFields(_Body):
    """A key's name, limits and role (accounts.limits checks the values: 400 naming the field)."""

    name: Any = None
    spend_limit_usd: Any = None
    spend_limit_period: Any = None
    models: Any = None
    rpm: Any = None
    tpm: Any = None
    expires_at: Any = None
    allowed_ips: Any = None
    role: Any = None
    # On creation only: the member whose personal key this is (a team key when absent).
    owner_user_id: str | None = None

    def given(self) -> dict[str, Any]:
        """The fields the client sent (PATCH: a field sent as null clears that limit)."""
        return {name: getattr(self, name) for name in self.model_fields_set if name != "owner_user_id"}


class Topup(_Body):
    amount_usd: Decimal = Field(gt=0)
    note: str | None = Field(default=None, max_length=255)


class TierSet(_Body):
    tier: str


class ModelPut(_Body):
    kind: Literal["text", "media"]
    spec: dict[str, Any]


def _operator(request: Request) -> Operator:
    return Operator.for_services(get_services(request), request_actor(request, "operator_token"))


@router.get("/teams")
async def list_teams(request: Request) -> Response:
    teams = await _operator(request).list_teams()
    return ok({"teams": [t.to_public() for t in teams]})


@router.post("/teams")
async def create_team(request: Request, body: TeamCreate) -> Response:
    return ok((await _operator(request).create_team(body.name)).to_public())


@router.get("/teams/{team}")
async def show_team(request: Request, team: str) -> Response:
    return ok((await _operator(request).team(team)).to_public())


@router.patch("/teams/{team}")
async def patch_team(request: Request, team: str, body: TeamPatch) -> Response:
    op = _operator(request)
    updated = await op.set_flags(team, asset_service=body.asset_service, log_retention=body.log_retention)
    if "log_days" in body.model_fields_set:  # null is a value here: back to the default window
        updated = await op.set_log_days(team, body.log_days)
    if body.cache is not None or body.cache_tool_calls is not None:
        updated = await op.set_cache(team, cache=body.cache, tool_calls=body.cache_tool_calls)
    return ok(updated.to_public())


@router.delete("/teams/{team}/cache")
async def purge_team_cache(request: Request, team: str) -> Response:
    found, gone = await _operator(request).purge_cache(team)
    return ok({"team": found.to_public(), "entries_purged": gone})


@router.put("/teams/{team}/tier")
async def set_tier(request: Request, team: str, body: TierSet) -> Response:
    return ok((await _operator(request).set_tier(team, body.tier)).to_public())


@router.post("/teams/{team}/suspend")
async def suspend_team(request: Request, team: str) -> Response:
    return ok((await _operator(request).suspend(team)).to_public())


@router.post("/teams/{team}/unsuspend")
async def unsuspend_team(request: Request, team: str) -> Response:
    return ok((await _operator(request).unsuspend(team)).to_public())


@router.post("/teams/{team}/end-sessions")
async def end_sessions(request: Request, team: str) -> Response:
    found, ended = await _operator(request).end_sessions(team)
    return ok({"team": found.to_public(), "sessions_ended": ended})


@router.post("/teams/{team}/topups")
async def topup(request: Request, team: str, body: Topup) -> Response:
    result = await _operator(request).topup(team, body.amount_usd, note=body.note)
    return ok(
        {
            "team": result.team.to_public(),
            "amount_usd": display_usd(result.amount_micros),
            "tier_changed": result.tier_changed,
        }
    )


@router.get("/teams/{team}/ledger")
async def ledger(request: Request, team: str, limit: int = 100, before_id: int | None = None) -> Response:
    entries = await _operator(request).ledger(team, limit=limit, before_id=before_id)
    return ok({"entries": [e.to_public() for e in entries]})


@router.post("/teams/{team}/keys")
async def create_key(request: Request, team: str, body: KeyFields | None = None) -> Response:
    fields = body.given() if body else {}
    owner = body.owner_user_id if body else None
    created = await _operator(request).create_key(team, fields=fields, owner_user_id=owner)
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
    keys = await _operator(request).list_keys(team)
    return ok({"keys": [k.to_public() for k in keys]})


@router.get("/keys/{key_id}")
async def show_key(request: Request, key_id: str) -> Response:
    return ok((await _operator(request).key(key_id)).to_public())


@router.patch("/keys/{key_id}")
async def update_key(request: Request, key_id: str, body: KeyFields) -> Response:
    return ok((await _operator(request).update_key(key_id, body.given())).to_public())


@router.post("/keys/{key_id}/revoke")
async def revoke_key(request: Request, key_id: str) -> Response:
    return ok((await _operator(request).revoke_key(key_id)).to_public())


@router.get("/retention")
async def retention(request: Request) -> Response:
    """The retention settings and the pruner's figures (rows removed, archive files, sizes)."""
    services = get_services(request)
    figures = await read_figures(services.db)
    return ok({"settings": services.settings.retention.model_dump(), **asdict(figures)})


@router.get("/alerts")
async def alerts(request: Request, limit: int = 50) -> Response:
    """Operator alerts: whether they are on, each alert's last state, the latest events and their attempts."""
    if not 1 <= limit <= 500:
        raise InvalidParameters("limit must be between 1 and 500", param="limit")
    services = get_services(request)
    url = services.settings.operator_webhook_url
    shown = None if url is None else _origin(url)
    return ok({"enabled": url is not None, "url": shown, **await alert_overview(services.db, limit=limit)})


def _origin(url: str) -> str:
    """The URL's scheme and host only: its path or query may be the receiver's credential."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}/…"


@router.get("/models")
async def list_models(request: Request) -> Response:
    snapshot = await _operator(request).models()
    return ok(
        {
            "text_models": [m.model_dump(mode="json") for m in snapshot.text.values()],
            "media_models": [m.model_dump(mode="json") for m in snapshot.media.values()],
        }
    )


@router.get("/upstreams")
async def list_upstreams(request: Request) -> Response:
    """Each text deployment's state as the serving process sees it (docs/api/routing.md)."""
    services = get_services(request)
    snapshot = await _operator(request).models()
    prober = services[PROBES]
    states = deployment_states(snapshot.text.values(), services[DEPLOYMENT_HEALTH].health(), prober.next_probe)
    return ok({"process": os.getpid(), "deployments": states})


@router.put("/models/{slug:path}")
async def put_model(request: Request, slug: str, body: ModelPut) -> Response:
    entry = await _operator(request).put_model(body.kind, slug, body.spec)
    return ok(entry.model_dump(mode="json"))


@router.delete("/models/{slug:path}")
async def delete_model(request: Request, slug: str) -> Response:
    await _operator(request).delete_model(slug)
    return ok({"deleted": slug})
