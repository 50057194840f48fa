"""A finished task's row as the retention pruner removes it (`retention/tasks.py`): which tasks are due, and
their delete in the caller's transaction, with their webhook deliveries (`webhooks.prune`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, and_, delete, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from modelport.media.tasks.states import TERMINAL
from modelport.media.tasks.tables import media_tasks
from modelport.webhooks import prune as outbox_prune


def due(cutoff_ms: int, now_ms: int, *, limit: int) -> Select[Any]:
    """The ids of up to `limit` tasks, oldest first, that ended before `cutoff_ms`, whose result has expired
    at `now_ms` and none of whose deliveries a sender holds."""
    t = media_tasks.c
    return (
        select(t.id)
        .where(
            t.created_at_ms < cutoff_ms,  # ended >= created: walks ix_media_tasks_created_id
            t.status.in_(TERMINAL),
            t.ended_at_ms < cutoff_ms,
            or_(t.result_expires_at_ms.is_(None), t.result_expires_at_ms <= now_ms),
            ~outbox_prune.held_by_sender(t.id, now_ms),
        )
        .order_by(t.created_at_ms, t.id)
        .limit(limit)
    )


async def delete_ended(conn: AsyncConnection, task_ids: Sequence[str]) -> tuple[int, int, int]:
    """Delete these tasks (the ended ones) with their deliveries and attempts; (tasks, deliveries, attempts)
    removed."""
    attempts, deliveries = await outbox_prune.delete_for_tasks(conn, task_ids)
    t = media_tasks.c
    tasks = await conn.execute(delete(media_tasks).where(and_(t.id.in_(task_ids), t.status.in_(TERMINAL))))
    return tasks.rowcount, deliveries, attempts
