"""The Task object clients see (GET /api/v1/tasks/{id}, list items, webhook `data`).

`progress` is 0-100 while a model reports it (null: unknown), 100 on success; `queue_position` (1 = next)
only while `queued`. Units: every timestamp (`submit_time`, `end_time`, `result_expires_at`) is UNIX milliseconds, and
`duration` is milliseconds from when a worker first started the task (its creation, if none did) to its end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelport.media.tasks.rows import TaskRow
from modelport.media.tasks.states import TaskStatus

UrlFor = Callable[[str, int], str]  # (file_id, expires_at_ms) -> signed download URL


def task_view(task: TaskRow, url_for: UrlFor, *, queue_position: int | None = None) -> dict[str, Any]:
    """`queue_position`: the caller's count while the task is `queued` (1 = next), else null."""
    resources: list[dict[str, Any]] = []
    if task.status == TaskStatus.SUCCESS and task.result_expires_at_ms is not None:
        for res in task.resources:
            resources.append(
                {
                    "url": url_for(str(res["file_id"]), task.result_expires_at_ms),
                    "type": res["type"],
                    "width": res.get("width"),
                    "height": res.get("height"),
                    "format": res["format"],
                    "role": res.get("role", "primary"),
                }
            )
    duration = None
    if task.ended_at_ms is not None:
        duration = task.ended_at_ms - (task.started_at_ms if task.started_at_ms is not None else task.created_at_ms)
    view: dict[str, Any] = {
        "status": task.status,
        "task_id": task.id,
        "model_id": task.model_id,
        "duration": duration,
        "result": {
            "resources": resources,
            "metadata": dict(task.metadata),
            "extensions": {"submit_time": task.created_at_ms, "end_time": task.ended_at_ms},
        },
        "result_expires_at": task.result_expires_at_ms if task.status == TaskStatus.SUCCESS else None,
        "progress": task.progress,
        "queue_position": queue_position if task.status == TaskStatus.QUEUED else None,
    }
    if task.status in (TaskStatus.FAILED, TaskStatus.CANCELLED):
        view["error"] = {"code": task.error_code, "message": task.error_message}
    return view
