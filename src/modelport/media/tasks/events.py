"""A task's webhook events: their types, their Standard Webhooks body, and their outbox row.

The tasks feature decides which of its changes fires which event, and whether the task's creator chose it;
this module builds the event and writes its delivery row in the caller's transaction (`enqueue_task_event`),
so the event exists exactly when the change it reports does. The sender delivers it like every other row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from modelport.webhooks import outbox
from modelport.webhooks.registry import event_body


class TaskEvent(StrEnum):
    # Each member has its row in `webhooks/registry.py` (source `task`).
    # A worker started the task's first run (only when its creator chose it in `X-Webhook-Events`).
    STARTED = "task.started"
    # The running task's progress changed (chosen events only; at most every `progress_webhook_seconds`).
    PROGRESS = "task.progress"
    # The task ended with its result files.
    SUCCEEDED = "task.succeeded"
    # The task ended without a result; its price was released.
    FAILED = "task.failed"
    # The client cancelled the task; its price was released.
    CANCELLED = "task.cancelled"


# What a task's webhook reports when its creator chose no events: how it ended.
DEFAULT_EVENTS = (TaskEvent.SUCCEEDED, TaskEvent.FAILED, TaskEvent.CANCELLED)


@dataclass(frozen=True, slots=True)
class Event:
    """One event to deliver: its id (the `webhook-id` header of every attempt), its type, the exact JSON body
    every attempt sends, and the time after which no attempt is made (the task's result expiry)."""

    id: str
    event_type: str
    payload: str
    give_up_at_ms: int


def task_event(event_type: TaskEvent, data: Mapping[str, Any], *, at_ms: int, give_up_at_ms: int) -> Event:
    """A new event whose body is the Standard Webhooks payload: `type`, `timestamp` (ISO 8601, ms) and
    `data` (the Task as GET returns it)."""
    return Event(outbox.new_delivery_id(), event_type, event_body(event_type, data, at_ms), give_up_at_ms)


async def enqueue_task_event(conn: AsyncConnection, event: Event, *, team_id: str, task_id: str, url: str) -> None:
    """Write the event's pending delivery to `url` in the caller's transaction (the task's change)."""
    await outbox.enqueue(
        conn,
        team_id=team_id,
        url=url,
        event_type=event.event_type,
        payload=event.payload,
        source="task",
        give_up_at_ms=event.give_up_at_ms,
        task_id=task_id,
        delivery_id=event.id,
    )
