"""Which webhook event a change of a task fires: its ending, or `task.started` / `task.progress` while
`processing`, when the task's creator chose it (`X-Webhook-Events`; by default the endings). The
transitions write it to the outbox with the change (`effects.webhook_outbox`)."""

from __future__ import annotations

from modelport.clock import now_ms
from modelport.media.tasks.events import DEFAULT_EVENTS, Event, TaskEvent, task_event
from modelport.media.tasks.rows import TaskRow
from modelport.media.tasks.states import TaskStatus
from modelport.media.tasks.views import UrlFor, task_view

# The event an ended task's webhook reports.
ENDED_EVENTS = {
    TaskStatus.SUCCESS: TaskEvent.SUCCEEDED,
    TaskStatus.FAILED: TaskEvent.FAILED,
    TaskStatus.CANCELLED: TaskEvent.CANCELLED,
}


class TaskEvents:
    """The event of a task's current state (an `effects.EventOf`). `result_retention_seconds`: the
    deployment's, for the give-up time of an event of a task without its own."""

    def __init__(self, result_retention_seconds: int, url_for: UrlFor) -> None:
        self._retention = result_retention_seconds
        self._url_for = url_for

    def __call__(self, task: TaskRow) -> Event | None:
        """None when the task's creator did not choose the event of this change (or it fires none)."""
        if task.status in ENDED_EVENTS:
            event = ENDED_EVENTS[task.status]
        elif task.status == TaskStatus.PROCESSING:
            event = TaskEvent.PROGRESS if task.progress is not None else TaskEvent.STARTED
        else:
            return None
        if event not in (task.webhook_events or DEFAULT_EVENTS):
            return None
        retention = task.result_retention_seconds or self._retention
        give_up = task.result_expires_at_ms or (now_ms() + retention * 1000)
        at = task.ended_at_ms or now_ms()
        return task_event(event, task_view(task, self._url_for), at_ms=at, give_up_at_ms=give_up)
