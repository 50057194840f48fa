"""The outbox's rows as the retention pruner removes them (`retention/deliveries.py`, `retention/tasks.py`):
ended deliveries with their attempts, in the caller's transaction. A pending delivery is never removed
here, and a task's deliveries go only with their task."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Select, delete, exists, select
from sqlalchemy.ext.asyncio import AsyncConnection

from modelport.webhooks.registry import Source
from modelport.webhooks.states import DeliveryStatus
from modelport.webhooks.tables import webhook_attempts, webhook_deliveries


def ended_before(sources: Sequence[Source], before_ms: int, *, limit: int) -> Select[Any]:
    """The ids of up to `limit` ended deliveries (delivered, failed, stopped) of `sources` created before
    `before_ms`."""
    d = webhook_deliveries.c
    return (
        select(d.id)
        .where(d.source.in_(sources), d.created_at_ms < before_ms, d.status != DeliveryStatus.PENDING)
        .limit(limit)
    )


async def delete_ended(conn: AsyncConnection, delivery_ids: Sequence[str]) -> tuple[int, int]:
    """Delete these deliveries' attempts, and the deliveries unless one became pending again (a redelivery)
    meanwhile; (attempts, deliveries) removed."""
    d = webhook_deliveries.c
    attempts = await conn.execute(delete(webhook_attempts).where(webhook_attempts.c.delivery_id.in_(delivery_ids)))
    deliveries = await conn.execute(
        delete(webhook_deliveries).where(d.id.in_(delivery_ids), d.status != DeliveryStatus.PENDING)
    )
    return attempts.rowcount, deliveries.rowcount


def held_by_sender(task_id: ColumnElement[str], now_ms: int) -> ColumnElement[bool]:
    """True for a task one of whose deliveries a sender holds now (its claim has not run out)."""
    d = webhook_deliveries.c
    return exists().where(d.task_id == task_id, d.status == DeliveryStatus.PENDING, d.lease_until_ms > now_ms)


async def delete_for_tasks(conn: AsyncConnection, task_ids: Sequence[str]) -> tuple[int, int]:
    """Delete every delivery of these tasks with its attempts; (attempts, deliveries) removed."""
    d = webhook_deliveries.c
    deliveries = select(d.id).where(d.task_id.in_(task_ids)).scalar_subquery()
    attempts = await conn.execute(delete(webhook_attempts).where(webhook_attempts.c.delivery_id.in_(deliveries)))
    removed = await conn.execute(delete(webhook_deliveries).where(d.task_id.in_(task_ids)))
    return attempts.rowcount, removed.rowcount
