"""The team's audit log (`/console/audit`): sessions signed in with an admin key only, like the API."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.auth import AuthContext
from modelport.accounts.permissions import Permission
from modelport.console.audit_view import audit_context, audit_csv, audit_events
from modelport.console.deps import team_with
from modelport.console.templating import render

router = APIRouter()


@router.get("/audit")
async def audit_page(request: Request, auth: AuthContext = Depends(team_with(Permission.READ_AUDIT))) -> Response:
    events, limit, as_csv = await audit_events(request, auth.team_id)
    return audit_csv(events) if as_csv else render(request, "team/audit.html", audit_context(request, events, limit))
