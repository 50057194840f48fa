"""Overview: balances, recent spend, requests and error rate, tasks in flight."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.auth import AuthContext
from modelport.accounts.service import get_team
from modelport.console.deps import require_team
from modelport.console.templating import render
from modelport.web.deps import get_services

router = APIRouter()


@router.get("/")
async def overview(request: Request, auth: AuthContext = Depends(require_team)) -> Response:
    services = get_services(request)
    team = await get_team(services.db, auth.team_id)
    return render(request, "team/overview.html", {"title": "Overview", "active": "overview", "team": team})
