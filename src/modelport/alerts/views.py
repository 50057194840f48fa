"""What `GET /admin/v1/alerts` shows: each alert's last reported state and the latest operator events with
every delivery attempt (the shape of a task's delivery log)."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.media.webhooks.outbox import with_attempts
from modelport.storage.tables import operator_alert_state, webhook_deliveries


async def overview(engine: AsyncEngine, *, limit: int) -> dict[str, Any]:
    d = webhook_deliveries.c
    async with engine.connect() as conn:
        states = (await conn.execute(select(operator_alert_state).order_by(operator_alert_state.c.key))).all()
        deliveries = (
            await conn.execute(
                select(webhook_deliveries)
                .where(d.source == "operator")
                .order_by(d.created_at_ms.desc(), d.id.desc())
                .limit(limit)
            )
        ).all()
        views = await with_attempts(conn, deliveries)
    for view, row in zip(views, deliveries, strict=True):
        del view["url"]  # the operator's own hook URL (often its credential) is not shown back
        view["payload"] = orjson.loads(row.payload)
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
