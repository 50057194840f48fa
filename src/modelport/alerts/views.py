"""What `GET /admin/v1/alerts` shows: each alert's last reported state and the latest operator events with
every delivery attempt (the shape of a task's delivery log)."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.storage.tables import operator_alert_state, webhook_attempts, webhook_deliveries


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
        attempts = (
            await conn.execute(
                select(webhook_attempts)
                .where(webhook_attempts.c.delivery_id.in_([r.id for r in deliveries]))
                .order_by(webhook_attempts.c.id)
            )
        ).all()
    by_delivery: dict[str, list[dict[str, Any]]] = {}
    for a in attempts:
        by_delivery.setdefault(a.delivery_id, []).append(
            {
                "attempt": int(a.attempt),
                "timestamp": int(a.started_at_ms),
                "duration_ms": int(a.duration_ms),
                "status_code": a.status_code,
                "outcome": a.outcome,
                "error": a.error,
            }
        )
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
        "deliveries": [
            {
                "webhook_id": r.id,
                "event_type": r.event_type,
                "status": r.status,
                "attempt_count": int(r.attempts),
                "next_attempt_at": int(r.next_attempt_at_ms) if r.status == "pending" else None,
                "created_at": int(r.created_at_ms),
                "ended_at": None if r.ended_at_ms is None else int(r.ended_at_ms),
                "payload": orjson.loads(r.payload),
                "attempts": by_delivery.get(r.id, []),
            }
            for r in deliveries
        ],
    }
