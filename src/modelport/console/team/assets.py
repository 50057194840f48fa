"""Assets: the team's provider assets with their status and probe data (type, size, dimensions, duration)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.auth import AuthContext
from modelport.accounts.permissions import Permission
from modelport.console.deps import team_with
from modelport.console.forms import choice
from modelport.console.templating import render
from modelport.media.assets import repository as asset_repo
from modelport.media.assets.service import STATUSES
from modelport.web.deps import get_services
from modelport.web.query_int import query_int

router = APIRouter()

PAGE_SIZE = 25


@router.get("/assets")
async def assets_page(request: Request, auth: AuthContext = Depends(team_with(Permission.USE_MEDIA))) -> Response:
    engine = get_services(request).db
    status = choice(request, "status", ("", *STATUSES), "") or None
    page = query_int(request.query_params.get("page"), "page", low=1, high=100_000, default=1) or 1
    records, total = await asset_repo.list_assets(
        engine, auth.team_id, status=status, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE
    )
    enabled = await asset_repo.asset_service_enabled(engine, auth.team_id)
    context = {
        "title": "Assets",
        "active": "assets",
        "records": records,
        "total": total,
        "page": page,
        "pages": max(1, -(-total // PAGE_SIZE)),
        "statuses": ("", *STATUSES),
        "status": status or "",
        "enabled": enabled,
    }
    return render(request, "team/assets.html", context)
