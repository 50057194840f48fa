"""Teams: the list, creating one, and a team's page (top-up with a note, tier, flags, suspension, keys, ledger;
its members and invitations, whose forms are `team_people`'s)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.permissions import TEAM_ROLES
from modelport.billing.key_budget import key_spend_view
from modelport.billing.topups import tier_rank
from modelport.console.deps import require_operator
from modelport.console.key_forms import form_values, key_form_fields
from modelport.console.operator.common import back, flash, form_fields, operator, page, people
from modelport.errors import ServiceError
from modelport.money import display_usd
from modelport.web.deps import get_services
from modelport.web.query_int import MAX_QUERY_INT, query_int

router = APIRouter(prefix="/admin", dependencies=[Depends(require_operator)])

LEDGER_PAGE = 50


@router.get("/")
async def teams_page(request: Request) -> Response:
    teams = await operator(request).list_teams()
    context = {
        "title": "Teams",
        "active": "teams",
        "teams": teams,
        "total_balance": sum(t.balance_micros for t in teams),
        "total_frozen": sum(t.frozen_micros for t in teams),
        "suspended": sum(1 for t in teams if t.suspended),
        "first_tier": get_services(request).settings.tiers[0].name,
    }
    return page(request, "operator/teams.html", context)


@router.post("/teams")
async def create_team(request: Request) -> Response:
    name = (await form_fields(request)).get("name", "")
    try:
        team = await operator(request).create_team(name)
    except ServiceError as exc:
        flash(request, exc.detail or exc.category, error=True)
        return back(request, "/admin/")
    flash(request, f"Created team {team.name}.")
    return back(request, f"/admin/teams/{team.id}")


async def render_team_page(
    request: Request,
    team_ref: str,
    *,
    new_key: str | None = None,
    invited: dict[str, str] | None = None,
    refusal: str | None = None,
    status: int = 200,
) -> Response:
    """The team's page; `new_key` and `invited` (an invitation's email and URL) are shown in this answer only,
    `refusal` is a member action's error shown above the members (with its `status`)."""
    op = operator(request)
    team = await op.team(team_ref)
    service = people(request)
    raw_before = request.query_params.get("before_id", "")
    before_id = query_int(raw_before, "before_id", low=1, high=MAX_QUERY_INT)
    tiers = get_services(request).settings.tiers
    rank = tier_rank(tiers, team.tier)
    keys = await op.list_keys(team.id)
    engine = get_services(request).db
    context = {
        "title": f"Team {team.name}",
        "active": "teams",
        "team": team,
        "keys": keys,
        "spend": {k.id: await key_spend_view(engine, k.id, k.limits) for k in keys if k.active},
        "forms": {k.id: form_values(k) for k in keys},
        "ledger": await op.ledger(team.id, limit=LEDGER_PAGE, before_id=before_id),
        "ledger_page": LEDGER_PAGE,
        "before_id": before_id,
        "tiers": tiers,
        "next_tier": tiers[rank + 1] if rank + 1 < len(tiers) else None,
        "new_key": new_key,
        "console_sessions": await op.session_count(team.id),
        "default_log_days": get_services(request).settings.retention.request_logs_days,
        "members": await service.members(team.id),
        "invitations": sorted(await service.invitations(team.id), key=lambda i: -i.created_at_ms),
        "team_roles": TEAM_ROLES,
        "invited": invited,
        "refusal": refusal,
    }
    return page(request, "operator/team.html", context, status=status)


@router.get("/teams/{team_ref}")
async def team_page(request: Request, team_ref: str) -> Response:
    return await render_team_page(request, team_ref)


@router.post("/teams/{team_id}/topup")
async def topup(request: Request, team_id: str) -> Response:
    fields = await form_fields(request)
    try:
        result = await operator(request).topup(team_id, fields.get("amount_usd", ""), note=fields.get("note") or None)
    except ServiceError as exc:
        flash(request, f"Top-up refused: {exc.detail or exc.category}", error=True)
    else:
        moved = f"; tier is now {result.team.tier}" if result.tier_changed else ""
        flash(request, f"Added ${display_usd(result.amount_micros)} to {result.team.name}{moved}.")
    return back(request, f"/admin/teams/{team_id}")


@router.post("/teams/{team_id}/tier")
async def set_tier(request: Request, team_id: str) -> Response:
    tier = (await form_fields(request)).get("tier", "")
    try:
        team = await operator(request).set_tier(team_id, tier)
    except ServiceError as exc:
        flash(request, exc.detail or exc.category, error=True)
    else:
        flash(request, f"{team.name} is now on tier {team.tier}.")
    return back(request, f"/admin/teams/{team_id}")


@router.post("/teams/{team_id}/flags")
async def set_flags(request: Request, team_id: str) -> Response:
    fields = await form_fields(request)
    team = await operator(request).set_flags(
        team_id, asset_service=fields.get("asset_service") == "on", log_retention=fields.get("log_retention") == "on"
    )
    flash(request, f"Saved the flags of {team.name}.")
    return back(request, f"/admin/teams/{team_id}")


@router.post("/teams/{team_id}/cache")
async def set_cache(request: Request, team_id: str) -> Response:
    fields = await form_fields(request)
    try:
        team = await operator(request).set_cache(
            team_id, cache=fields.get("cache", ""), tool_calls=fields.get("cache_tool_calls") == "on"
        )
    except ServiceError as exc:
        flash(request, exc.detail or exc.category, error=True)
    else:
        flash(request, f"{team.name}'s response cache is {team.cache}.")
    return back(request, f"/admin/teams/{team_id}")


@router.post("/teams/{team_id}/cache/purge")
async def purge_cache(request: Request, team_id: str) -> Response:
    team, gone = await operator(request).purge_cache(team_id)
    flash(request, f"Purged {gone} cached answer{'' if gone == 1 else 's'} of {team.name}.")
    return back(request, f"/admin/teams/{team_id}")


@router.post("/teams/{team_id}/log-days")
async def set_log_days(request: Request, team_id: str) -> Response:
    raw = (await form_fields(request)).get("log_days", "")
    try:
        team = await operator(request).set_log_days(team_id, raw)
    except ServiceError as exc:
        flash(request, exc.detail or exc.category, error=True)
    else:
        window = (
            "the default" if team.log_days is None else "forever" if team.log_days == 0 else f"{team.log_days:g} days"
        )
        flash(request, f"{team.name} keeps its request logs for {window}.")
    return back(request, f"/admin/teams/{team_id}")


@router.post("/teams/{team_id}/suspend")
async def suspend(request: Request, team_id: str) -> Response:
    team = await operator(request).suspend(team_id)
    flash(request, f"Suspended {team.name}: its keys are refused until you lift the suspension.")
    return back(request, f"/admin/teams/{team_id}")


@router.post("/teams/{team_id}/unsuspend")
async def unsuspend(request: Request, team_id: str) -> Response:
    team = await operator(request).unsuspend(team_id)
    flash(request, f"Lifted the suspension of {team.name}.")
    return back(request, f"/admin/teams/{team_id}")


@router.post("/teams/{team_id}/end-sessions")
async def end_sessions(request: Request, team_id: str) -> Response:
    team, ended = await operator(request).end_sessions(team_id)
    flash(request, f"Ended {ended} console session{'' if ended == 1 else 's'} of {team.name}.")
    return back(request, f"/admin/teams/{team_id}")


@router.post("/teams/{team_id}/keys")
async def create_key(request: Request, team_id: str) -> Response:
    try:
        fields = await key_form_fields(request)
        created = await operator(request).create_key(team_id, fields=fields)
    except ServiceError as exc:
        flash(request, exc.detail or exc.category, error=True)
        return back(request, f"/admin/teams/{team_id}")
    # Shown in this answer only (never put in the session cookie, which is signed but readable).
    return await render_team_page(request, team_id, new_key=created.key)


@router.post("/keys/{key_id}/edit")
async def edit_key(request: Request, key_id: str) -> Response:
    op = operator(request)
    record = await op.key(key_id)
    try:
        fields = await key_form_fields(request)
        fields.pop("name", None)  # the edit form has no name box
        await op.update_key(key_id, fields)
    except ServiceError as exc:
        flash(request, exc.detail or exc.category, error=True)
        return back(request, f"/admin/teams/{record.team_id}")
    flash(request, f"Saved the limits of key {record.prefix}….")
    return back(request, f"/admin/teams/{record.team_id}")


@router.post("/keys/{key_id}/revoke")
async def revoke_key(request: Request, key_id: str) -> Response:
    record = await operator(request).revoke_key(key_id)
    flash(request, f"Revoked key {record.prefix}….")
    return back(request, f"/admin/teams/{record.team_id}")
