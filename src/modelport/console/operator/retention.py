"""Retention: the windows in force, what the pruner removed and archived, the database's size, the oldest
log row (the figures Prometheus exports, read from `retention_stats` and the database)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.console.deps import require_operator
from modelport.console.operator.common import operator, page
from modelport.retention.stats import read_figures
from modelport.web.deps import get_services

router = APIRouter(prefix="/admin", dependencies=[Depends(require_operator)])


@router.get("/retention")
async def retention_page(request: Request) -> Response:
    services = get_services(request)
    teams = await operator(request).list_teams()
    context = {
        "title": "Retention",
        "active": "retention",
        "settings": services.settings.retention,
        "figures": await read_figures(services.db),
        "own_windows": [t for t in teams if t.log_days is not None],
        "database": services.db.dialect.name,
    }
    return page(request, "operator/retention.html", context)
