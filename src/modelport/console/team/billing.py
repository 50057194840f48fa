"""Billing: the ledger (top-ups, charges, holds and releases) with totals; the tier and what the next needs."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.auth import AuthContext
from modelport.accounts.service import get_team
from modelport.billing import statement
from modelport.billing.topups import tier_rank
from modelport.clock import now_ms
from modelport.console.deps import require_team
from modelport.console.forms import choice
from modelport.console.templating import render
from modelport.requestlog.store import DAY_MS
from modelport.web.deps import get_services
from modelport.web.query_int import MAX_QUERY_INT, query_int

router = APIRouter()

PAGE_SIZE = 50
PERIODS = ("7", "30", "90", "365")


@router.get("/billing")
async def billing_page(request: Request, auth: AuthContext = Depends(require_team)) -> Response:
    services = get_services(request)
    days = int(choice(request, "days", PERIODS, "30"))
    before = query_int(request.query_params.get("before"), "before", low=1, high=MAX_QUERY_INT)
    team = await get_team(services.db, auth.team_id)
    entries = await statement.entries(services.db, team.id, before_id=before, limit=PAGE_SIZE + 1)
    more = len(entries) > PAGE_SIZE
    entries = entries[:PAGE_SIZE]
    today = now_ms() // DAY_MS
    sums = await statement.totals(services.db, team.id, first_day=today - days + 1, last_day=today)
    kinds = [k for k in statement.KIND_LABELS if k in sums] + sorted(k for k in sums if k not in statement.KIND_LABELS)
    tiers = services.settings.tiers
    rank = tier_rank(tiers, team.tier)
    context = {
        "title": "Billing",
        "active": "billing",
        "team": team,
        "entries": entries,
        "older": entries[-1].id if more and entries else None,
        "first_page": before is None,
        "days": days,
        "periods": PERIODS,
        "totals": [(statement.KIND_LABELS.get(k, k), *sums[k]) for k in kinds],
        "net": sum(total for _, total in sums.values()),
        "tier": tiers[rank],
        "next_tier": tiers[rank + 1] if rank + 1 < len(tiers) else None,
        "labels": statement.KIND_NAMES,
    }
    return render(request, "team/billing.html", context)
