"""What the audit log's console pages share (`team/audit.py`, `operator/audit.py`): the events for the page's
filters, paging back by id, and `?format=csv` for the same filters. The filters are read by the audit
API's `audit_filter`, so their 400s are the API's."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.audit import ACTOR_KINDS, list_events
from modelport.console.forms import csv_response
from modelport.team_admin.audit import audit_filter
from modelport.web.deps import get_services

CSV_LIMIT = 10_000  # events in one export; page back with before_id for more
CSV_HEADER = (
    "id",
    "at_ms",
    "team_id",
    "actor_kind",
    "actor_key_id",
    "action",
    "target",
    "before",
    "after",
    "request_id",
    "client",
)


async def audit_events(request: Request, team_id: str | None) -> tuple[list[dict[str, Any]], int, bool]:
    found, limit = audit_filter(request, team_id)
    as_csv = request.query_params.get("format") == "csv"
    events = await list_events(get_services(request).db, found, limit=CSV_LIMIT if as_csv else limit)
    return events, limit, as_csv


def audit_csv(events: list[dict[str, Any]]) -> Response:
    rows = (
        (
            e["id"],
            e["at_ms"],
            e["team_id"],
            e["actor"]["kind"],
            e["actor"]["key_id"],
            e["action"],
            e["target"],
            None if e["before"] is None else json.dumps(e["before"], ensure_ascii=False),
            None if e["after"] is None else json.dumps(e["after"], ensure_ascii=False),
            e["request_id"],
            e["client"],
        )
        for e in events
    )
    return csv_response("audit.csv", CSV_HEADER, rows)


def audit_context(request: Request, events: list[dict[str, Any]], limit: int) -> dict[str, Any]:
    q = request.query_params
    return {
        "title": "Audit log",
        "active": "audit",
        "events": [{**e, "before": _shown(e["before"]), "after": _shown(e["after"])} for e in events],
        "actor_kinds": ACTOR_KINDS,
        "filters": {name: q.get(name, "") for name in ("team", "actor_kind", "action")},
        "next_before_id": events[-1]["id"] if len(events) == limit else None,
    }


def _shown(values: dict[str, Any] | None) -> str:
    return "-" if not values else json.dumps(values, ensure_ascii=False)
