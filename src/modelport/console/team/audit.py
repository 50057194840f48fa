"""The team's audit log (`/console/audit`): sessions signed in with an admin key only, like the API."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.auth import AuthContext
from modelport.console.audit_view import audit_context, audit_csv, audit_events
from modelport.console.deps import require_team
from modelport.console.templating import render
from modelport.errors import Forbidden

router = APIRouter()


@router.get("/audit")
async def audit_page(request: Request, auth: AuthContext = Depends(require_team)) -> Response:
    if auth.role != "admin":
        raise Forbidden("only a session signed in with an admin key can read the audit log")
    events, limit, as_csv = await audit_events(request, auth.team_id)
    return audit_csv(events) if as_csv else render(request, "team/audit.html", audit_context(request, events, limit))
