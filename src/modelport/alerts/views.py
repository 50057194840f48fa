"""What `GET /admin/v1/alerts` shows: each alert's last reported state and the latest operator events with
every delivery attempt (the shape of a task's delivery log)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.alerts.tables import operator_alert_state
from modelport.webhooks import outbox


async def overview(engine: AsyncEngine, *, limit: int) -> dict[str, Any]:
    async with engine.connect() as conn:
        states = (await conn.execute(select(operator_alert_state).order_by(operator_alert_state.c.key))).all()
    views = await outbox.for_operator(engine, limit=limit)
    return {
        "states": [
            {
                "key": s.key,
                "alerting": bool(s.alerting),
                "changed_at": int(s.changed_at_ms),
                "webhook_id": s.event_id,
            }
            for s in states
        ],
        "deliveries": views,
    }
