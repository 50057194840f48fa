"""Every team's request logs (filters, pages, one request's detail), media tasks, and the task queue."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlencode

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.clock import now_ms
from modelport.console.deps import require_operator
from modelport.console.operator.common import operator, page
from modelport.console.operator.queries import (
    LOG_STATUSES,
    TASK_STATUSES,
    Cursor,
    LogFilter,
    TaskFilter,
    get_log,
    list_logs,
    list_tasks,
    queue_state,
)
from modelport.errors import NotFound
from modelport.web.deps import get_services

router = APIRouter(prefix="/admin", dependencies=[Depends(require_operator)])

DAY_MS = 86_400_000


def _day_ms(raw: str) -> int | None:
    try:
        return int(datetime.strptime(raw, "%Y-%m-%d").replace(tzinfo=UTC).timestamp() * 1000)
    except ValueError:
        return None


async def _team_filter(request: Request, raw: str) -> tuple[str | None, str | None]:
    """(team id, a problem to show): an unknown team filters to nothing rather than to everything."""
    if not raw:
        return None, None
    try:
        return (await operator(request).team(raw)).id, None
    except NotFound:
        return "\x00none", f"There is no team {raw!r}."


def _filters(request: Request, names: tuple[str, ...]) -> dict[str, str]:
    return {n: request.query_params.get(n, "").strip()[:200] for n in names}


def _link(filters: dict[str, str], cursor: Cursor | None = None) -> str:
    query = {k: v for k, v in filters.items() if v}
    if cursor is not None:
        query["before"] = cursor.encode()
    return "?" + urlencode(query) if query else ""


@router.get("/logs")
async def logs_page(request: Request) -> Response:
    shown = _filters(request, ("team", "model", "status", "svc_user_id", "from", "to"))
    team_id, problem = await _team_filter(request, shown["team"])
    lo, hi = _day_ms(shown["from"]), _day_ms(shown["to"])
    recent = lo is None and hi is None
    if recent:  # by default the last 24 hours, so a filter that matches little never walks the whole log
        lo = now_ms() - DAY_MS
    f = LogFilter(
        team_id=team_id,
        model=shown["model"] or None,
        status=shown["status"] if shown["status"] in LOG_STATUSES else None,
        svc_user_id=shown["svc_user_id"] or None,
        lo_ms=lo,
        hi_ms=None if hi is None else hi + DAY_MS,  # the `to` day included
    )
    cursor = Cursor.decode(request.query_params.get("before"))
    found = await list_logs(get_services(request).db, f, cursor)
    context = {
        "title": "Request logs",
        "active": "logs",
        "filters": shown,
        "statuses": LOG_STATUSES,
        "problem": problem,
        "rows": found.rows,
        "paged": cursor is not None,
        "next_link": None if found.next is None else _link(shown, found.next),
        "first_link": _link(shown),
        "recent": recent,
    }
    return page(request, "operator/logs.html", context)


@router.get("/logs/{log_id}")
async def log_page(request: Request, log_id: str) -> Response:
    row = await get_log(get_services(request).db, log_id)
    if row is None:
        raise NotFound(f"no request {log_id!r}")
    return page(request, "operator/log.html", {"title": f"Request {log_id}", "active": "logs", "row": row})


@router.get("/tasks")
async def tasks_page(request: Request) -> Response:
    shown = _filters(request, ("team", "model", "status"))
    team_id, problem = await _team_filter(request, shown["team"])
    f = TaskFilter(
        team_id=team_id,
        model=shown["model"] or None,
        status=shown["status"] if shown["status"] in TASK_STATUSES else None,
    )
    cursor = Cursor.decode(request.query_params.get("before"))
    found = await list_tasks(get_services(request).db, f, cursor)
    context = {
        "title": "Media tasks",
        "active": "tasks",
        "filters": shown,
        "statuses": TASK_STATUSES,
        "problem": problem,
        "rows": found.rows,
        "paged": cursor is not None,
        "next_link": None if found.next is None else _link(shown, found.next),
        "first_link": _link(shown),
    }
    return page(request, "operator/tasks.html", context)


@router.get("/queue")
async def queue_page(request: Request) -> Response:
    services = get_services(request)
    state = await queue_state(services.db)
    context = {
        "title": "Queue and workers",
        "active": "queue",
        "state": state,
        "settings": services.settings.tasks,
        "backend": "PostgreSQL (PgQueuer, shared)"
        if services.db.dialect.name == "postgresql"
        else "in-memory, per process",
    }
    return page(request, "operator/queue.html", context)
