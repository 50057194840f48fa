"""The operator's audit log (`/console/admin/audit`): every team's changes, filtered by team, actor, action."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts import service as accounts
from modelport.console.audit_view import audit_context, audit_csv, audit_events
from modelport.console.deps import require_operator
from modelport.console.operator.common import page
from modelport.web.deps import get_services

router = APIRouter(prefix="/admin", dependencies=[Depends(require_operator)])


@router.get("/audit")
async def audit_page(request: Request) -> Response:
    ref = (request.query_params.get("team") or "")[:100] or None
    team_id = None if ref is None else (await accounts.get_team(get_services(request).db, ref)).id
    events, limit, as_csv = await audit_events(request, team_id)
    return audit_csv(events) if as_csv else page(request, "operator/audit.html", audit_context(request, events, limit))
