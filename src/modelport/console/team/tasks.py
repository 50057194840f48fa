"""Tasks: the team's media tasks with filters, frozen vs charged cost, result links while they last, and
each task's webhook deliveries with a redeliver button."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from modelport.accounts.auth import AuthContext
from modelport.accounts.permissions import Permission
from modelport.clock import now_ms
from modelport.console.deps import require_team, team_with
from modelport.console.forms import enum_choice, optional_text
from modelport.console.templating import console_root, render
from modelport.errors import Conflict, NotFound
from modelport.media.tasks import reads as task_reads
from modelport.media.tasks.service import TASKS
from modelport.media.tasks.states import TaskStatus
from modelport.media.tasks.views import task_view
from modelport.web.deps import get_services
from modelport.web.query_int import query_int
from modelport.webhooks import outbox

router = APIRouter()

PAGE_SIZE = 25


@router.get("/tasks")
async def tasks_page(request: Request, auth: AuthContext = Depends(require_team)) -> Response:
    tasks = get_services(request)[TASKS]
    status = enum_choice(request, "status", TaskStatus)
    model_id = optional_text(request, "model_id", max_len=200)
    page = query_int(request.query_params.get("page"), "page", low=1, high=100_000, default=1) or 1
    rows, total = await task_reads.list_page(
        tasks.engine,
        auth.team_id,
        task_reads.ListFilter(status, model_id, None, None),
        offset=(page - 1) * PAGE_SIZE,
        limit=PAGE_SIZE,
    )
    items = [(row, task_view(row, tasks.url_for)) for row in rows]
    context = {
        "title": "Tasks",
        "active": "tasks",
        "items": items,
        "total": total,
        "page": page,
        "pages": max(1, -(-total // PAGE_SIZE)),
        "statuses": ("", *TaskStatus),
        "status": status or "",
        "model_id": model_id or "",
        "now": now_ms(),
    }
    return render(request, "team/tasks.html", context)


@router.get("/tasks/{task_id}")
async def task_detail(request: Request, task_id: str, auth: AuthContext = Depends(require_team)) -> Response:
    tasks = get_services(request)[TASKS]
    if len(task_id) > 64:
        raise NotFound("no such task")
    row = await tasks.get(auth.team_id, task_id)  # another team's task: NotFound
    deliveries = await outbox.for_task(tasks.engine, row.id)
    context = {
        "title": "Task",
        "active": "tasks",
        "row": row,
        "view": task_view(row, tasks.url_for),
        "deliveries": deliveries,
        "now": now_ms(),
        "redelivered": request.query_params.get("redelivered"),
    }
    return render(request, "team/task_detail.html", context)


@router.post("/tasks/{task_id}/webhooks/{delivery_id}/redeliver")
async def redeliver(
    request: Request, task_id: str, delivery_id: str, auth: AuthContext = Depends(team_with(Permission.USE_MEDIA))
) -> Response:
    tasks = get_services(request)[TASKS]
    row = await tasks.get(auth.team_id, task_id)
    known = {d["webhook_id"] for d in await outbox.for_task(tasks.engine, row.id)}
    if delivery_id not in known:
        raise NotFound(f"no webhook delivery {delivery_id[:64]!r} for this task")
    if not await outbox.redeliver(tasks.engine, auth.team_id, delivery_id):
        raise Conflict("this delivery is still being sent, or the task's result has expired")
    return RedirectResponse(f"{console_root(request)}/tasks/{row.id}?redelivered={delivery_id}", status_code=303)
