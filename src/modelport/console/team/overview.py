"""Overview: balances, spend over time, requests and error rate, tasks in flight."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.auth import AuthContext
from modelport.accounts.service import get_team
from modelport.billing import daily as billing_daily
from modelport.console.charts import daily
from modelport.console.deps import require_team
from modelport.console.team.usage import Totals, period_usage
from modelport.console.templating import render
from modelport.media.tasks import reads as task_reads
from modelport.media.tasks.states import UNFINISHED
from modelport.web.deps import get_services

router = APIRouter()

DAYS = 30


@router.get("/")
async def overview(request: Request, auth: AuthContext = Depends(require_team)) -> Response:
    services = get_services(request)
    team = await get_team(services.db, auth.team_id)
    first, last, rows = await period_usage(request, auth.team_id, DAYS)
    month, week, today = Totals("30 days"), Totals("7 days"), Totals("today")
    for row in rows:
        month.add(row)
        if row.day > last - 7:
            week.add(row)
        if row.day == last:
            today.add(row)
    in_flight = {}
    for status in UNFINISHED:
        _, count = await task_reads.list_page(
            services.db, auth.team_id, task_reads.ListFilter(status=status), offset=0, limit=1
        )
        in_flight[status] = count
    # Every charge (text requests and media tasks), from the ledger's day totals; charges are negative.
    charges = await billing_daily.per_day(services.db, auth.team_id, "charge", first, last)
    spend = daily(
        first,
        last,
        charges.items(),
        day=lambda item: item[0],
        label=lambda _item: "spend",
        value=lambda item: -item[1] / 1e6,
        unit="usd",
    )
    context = {
        "title": "Overview",
        "active": "overview",
        "team": team,
        "month": month,
        "week": week,
        "today": today,
        "in_flight": in_flight,
        "spend": spend,
        "spend_total": -sum(charges.values()),
    }
    return render(request, "team/overview.html", context)
