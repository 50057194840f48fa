"""Pruning finished media tasks whose results have expired, with their webhook deliveries and attempts
(removed by the outbox's own `webhooks.prune`).

A task goes `days` after it ended, and only once its result files have expired (their rows are the files
sweeper's) and no sender holds one of its deliveries. The ledger entries of a task stay: the ledger is the
money's record and is never pruned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import and_, delete, or_, select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.media.tasks.states import TERMINAL
from modelport.media.tasks.tables import media_tasks
from modelport.retention.pacing import Pacing
from modelport.webhooks import prune

DAY_MS = 86_400_000


@dataclass
class TasksPruned:
    tasks: int = 0
    deliveries: int = 0
    attempts: int = 0


async def prune_tasks(engine: AsyncEngine, days: float, pacing: Pacing, now_ms: int) -> TasksPruned:
    pruned = TasksPruned()
    if days <= 0:
        return pruned
    cutoff = now_ms - int(days * DAY_MS)
    t = media_tasks.c
    held = prune.held_by_sender(t.id, now_ms)
    due = (
        select(t.id)
        .where(
            t.created_at_ms < cutoff,  # ended >= created: walks ix_media_tasks_created_id
            t.status.in_(TERMINAL),
            t.ended_at_ms < cutoff,
            or_(t.result_expires_at_ms.is_(None), t.result_expires_at_ms <= now_ms),
            ~held,
        )
        .order_by(t.created_at_ms, t.id)
        .limit(pacing.batch_rows)
    )
    while True:
        started = time.monotonic()
        async with engine.begin() as conn:
            ids = list((await conn.scalars(due)).all())
            if not ids:
                return pruned
            attempts, deliveries = await prune.delete_for_tasks(conn, ids)
            pruned.attempts += attempts
            pruned.deliveries += deliveries
            pruned.tasks += (
                await conn.execute(delete(media_tasks).where(and_(t.id.in_(ids), t.status.in_(TERMINAL))))
            ).rowcount
        if len(ids) < pacing.batch_rows:
            return pruned
        await pacing.pause_after(started)
