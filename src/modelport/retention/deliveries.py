"""Webhook deliveries that report no task (team notifications, operator alerts) as a prune target: ended
rows (delivered, failed, stopped) created more than `retention.tasks_days` ago, with their attempts.
A task's deliveries go with their task (`retention.tasks`)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.retention.pacing import Pacing
from modelport.webhooks.states import DeliveryStatus
from modelport.webhooks.tables import webhook_attempts, webhook_deliveries

DAY_MS = 86_400_000


@dataclass(slots=True)
class EventDeliveries:
    days: float
    pacing: Pacing
    name: str = "webhook_deliveries (notifications, operator alerts)"

    async def prune(self, engine: AsyncEngine, now_ms: int) -> dict[str, int]:
        if self.days <= 0:
            return {}
        d = webhook_deliveries.c
        due = (
            select(d.id)
            .where(
                d.source.in_(("notification", "operator")),
                d.created_at_ms < now_ms - int(self.days * DAY_MS),
                d.status != DeliveryStatus.PENDING,
            )
            .limit(self.pacing.batch_rows)
        )
        removed = {"webhook_deliveries": 0, "webhook_attempts": 0}
        while True:
            started = time.monotonic()
            async with engine.begin() as conn:
                ids = list((await conn.scalars(due)).all())
                if not ids:
                    return removed
                removed["webhook_attempts"] += (
                    await conn.execute(delete(webhook_attempts).where(webhook_attempts.c.delivery_id.in_(ids)))
                ).rowcount
                removed["webhook_deliveries"] += (
                    await conn.execute(
                        delete(webhook_deliveries).where(d.id.in_(ids), d.status != DeliveryStatus.PENDING)
                    )
                ).rowcount
            if len(ids) < self.pacing.batch_rows:
                return removed
            await self.pacing.pause_after(started)
