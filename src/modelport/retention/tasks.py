"""Pruning finished media tasks whose results have expired, with their webhook deliveries and attempts
(removed by their owners: `media/tasks/prune.py`, `webhooks/prune.py`).

A task goes `days` after it ended, and only once its result files have expired (their rows are the files
sweeper's) and no sender holds one of its deliveries. The ledger entries of a task stay: the ledger is the
money's record and is never pruned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.media.tasks import prune as task_prune
from modelport.retention.pacing import Pacing

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
    due = task_prune.due(now_ms - int(days * DAY_MS), now_ms, limit=pacing.batch_rows)
    while True:
        started = time.monotonic()
        async with engine.begin() as conn:
            ids = list((await conn.scalars(due)).all())
            if not ids:
                return pruned
            tasks, deliveries, attempts = await task_prune.delete_ended(conn, ids)
            pruned.tasks += tasks
            pruned.deliveries += deliveries
            pruned.attempts += attempts
        if len(ids) < pacing.batch_rows:
            return pruned
        await pacing.pause_after(started)
