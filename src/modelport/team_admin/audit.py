"""The audit log over HTTP, in the media envelope (docs/api/audit.md).

- `GET /admin/v1/audit`  every team's events (admin token): filters `team`, `actor_kind`, `action`,
  `since`, `until` (ms), paged newest first with `limit` and `before_id`;
- `GET /api/v1/audit`    the calling team's own events, same filters but `team`; keys with `role: admin`
  only (a member key gets 403, as on the keys API).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts import service as accounts
from modelport.accounts.audit import ACTOR_KINDS, AuditFilter, list_events
from modelport.accounts.auth import AuthContext
from modelport.accounts.permissions import Permission
from modelport.errors import InvalidParameters
from modelport.web.deps import get_services, media_auth_with, operator_auth
from modelport.web.envelope import ok
from modelport.web.query_int import MAX_QUERY_INT, query_int

operator_router = APIRouter(prefix="/admin/v1", tags=["admin"], dependencies=[Depends(operator_auth)])
team_router = APIRouter(prefix="/api/v1", tags=["audit"])
MAX_LIMIT = 500
MAX_TEXT = 64


def _param(name: str, schema: dict[str, object], description: str) -> dict[str, object]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


# Documented here, read by `audit_filter` (one strict integer parser for every query integer).
_FILTERS = [
    _param("actor_kind", {"type": "string", "enum": list(ACTOR_KINDS)}, "who made the change"),
    _param("action", {"type": "string", "maxLength": MAX_TEXT}, "e.g. key.create"),
    _param("since", {"type": "integer", "minimum": 0}, "UNIX ms, inclusive"),
    _param("until", {"type": "integer", "minimum": 0}, "UNIX ms, exclusive"),
    _param("limit", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 100}, "events per page"),
    _param("before_id", {"type": "integer", "minimum": 1}, "events older than this id (next_before_id)"),
]
MAX_TEAM_REF = 100  # a team name's limit
_TEAM = _param("team", {"type": "string", "maxLength": MAX_TEAM_REF}, "a team's id or name")


def _text(request: Request, name: str, limit: int = MAX_TEXT) -> str | None:
    value = request.query_params.get(name) or None
    if value is not None and (len(value) > limit or "\x00" in value):
        raise InvalidParameters(f"{name} is at most {limit} characters, without NUL", param=name)
    return value


def audit_filter(request: Request, team_id: str | None) -> tuple[AuditFilter, int]:
    """The filters and page size of an audit query; 400 naming the parameter for a bad one."""
    q = request.query_params
    kind = _text(request, "actor_kind")
    if kind is not None and kind not in ACTOR_KINDS:
        raise InvalidParameters(f"actor_kind must be one of {', '.join(ACTOR_KINDS)}", param="actor_kind")
    found = AuditFilter(
        team_id=team_id,
        actor_kind=kind,
        action=_text(request, "action"),
        since_ms=query_int(q.get("since"), "since", low=0, high=MAX_QUERY_INT),
        until_ms=query_int(q.get("until"), "until", low=0, high=MAX_QUERY_INT),
        before_id=query_int(q.get("before_id"), "before_id", low=1, high=MAX_QUERY_INT),
    )
    limit = query_int(q.get("limit"), "limit", low=1, high=MAX_LIMIT, default=100)
    assert limit is not None
    return found, limit


async def audit_page(request: Request, team_id: str | None) -> dict[str, object]:
    found, limit = audit_filter(request, team_id)
    events = await list_events(get_services(request).db, found, limit=limit)
    next_before = events[-1]["id"] if len(events) == limit else None
    return {"events": events, "next_before_id": next_before}


@operator_router.get(
    "/audit",
    summary="The audit log: every change by an operator or a team admin",
    openapi_extra={"parameters": [_TEAM, *_FILTERS]},
)
async def operator_audit(request: Request) -> Response:
    ref = _text(request, "team", MAX_TEAM_REF)
    team_id = None if ref is None else (await accounts.get_team(get_services(request).db, ref)).id
    return ok(await audit_page(request, team_id))


@team_router.get("/audit", summary="The team's audit log (admin keys only)", openapi_extra={"parameters": _FILTERS})
async def team_audit(request: Request, auth: AuthContext = Depends(media_auth_with(Permission.READ_AUDIT))) -> Response:
    return ok(await audit_page(request, auth.team_id))
