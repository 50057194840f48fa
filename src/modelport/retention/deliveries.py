"""Webhook deliveries that report no task (team notifications, operator alerts) as a prune target: ended
rows (delivered, failed, stopped) created more than `retention.tasks_days` ago, with their attempts
(removed by the outbox's own `webhooks.prune`).
A task's deliveries go with their task (`retention.tasks`)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.retention.pacing import Pacing
from modelport.webhooks import prune

DAY_MS = 86_400_000


@dataclass(slots=True)
class EventDeliveries:
    days: float
    pacing: Pacing
    name: str = "webhook_deliveries (notifications, operator alerts)"

    async def prune(self, engine: AsyncEngine, now_ms: int) -> dict[str, int]:
        if self.days <= 0:
            return {}
        due = prune.ended_before(
            ("notification", "operator"), now_ms - int(self.days * DAY_MS), limit=self.pacing.batch_rows
        )
        removed = {"webhook_deliveries": 0, "webhook_attempts": 0}
        while True:
            started = time.monotonic()
            async with engine.begin() as conn:
                ids = list((await conn.scalars(due)).all())
                if not ids:
                    return removed
                attempts, deliveries = await prune.delete_ended(conn, ids)
                removed["webhook_attempts"] += attempts
                removed["webhook_deliveries"] += deliveries
            if len(ids) < self.pacing.batch_rows:
                return removed
            await self.pacing.pause_after(started)
