"""The webhook outbox: delivery rows and their attempts.

Rows are written by `enqueue` (storage.outbox, re-exported here) in the transaction of the change they
report: a task's state, a team notification's crossing (team, no task) or an operator alert (no team).

A sender claims a due row with a compare-and-swap on `lease_until_ms` and records its attempt together with
the row's next state only while that claim is still its own; a sender that died leaves the claim to run
out, and another takes the delivery over. Delivery is at least once: a receiver may see an event twice
(same `webhook-id`) if a sender dies after the receiver answered and before the attempt was recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import insert, or_, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.clock import now_ms
from modelport.storage.outbox import SOURCES, Source, enqueue, new_delivery_id, schedule_end_ms
from modelport.storage.tables import webhook_attempts, webhook_deliveries
from modelport.storage.webhook_states import AttemptOutcome, DeliveryStatus

__all__ = ["SOURCES", "Source", "enqueue", "new_delivery_id", "schedule_end_ms"]  # the write side, for callers


@dataclass(frozen=True, slots=True)
class Delivery:
    id: str
    source: str  # task | notification | operator
    task_id: str | None
    team_id: str | None  # None: an operator alert
    url: str
    event_type: str
    payload: str
    status: DeliveryStatus
    attempts: int
    next_attempt_at_ms: int
    lease_until_ms: int
    give_up_at_ms: int


def _delivery(r: Any) -> Delivery:
    return Delivery(
        id=r.id,
        source=r.source,
        task_id=r.task_id,
        team_id=r.team_id,
        url=r.url,
        event_type=r.event_type,
        payload=r.payload,
        status=DeliveryStatus(r.status),
        attempts=int(r.attempts),
        next_attempt_at_ms=int(r.next_attempt_at_ms),
        lease_until_ms=int(r.lease_until_ms),
        give_up_at_ms=int(r.give_up_at_ms),
    )


async def due(
    engine: AsyncEngine, *, limit: int, exclude_teams: Sequence[str | None] = ()
) -> list[tuple[str, str | None]]:
    """(delivery id, team id) of due rows, oldest first; rows of `exclude_teams` left out (None in it: the
    operator's rows, which have no team)."""
    now = now_ms()
    query = select(webhook_deliveries.c.id, webhook_deliveries.c.team_id).where(
        webhook_deliveries.c.status == DeliveryStatus.PENDING,
        webhook_deliveries.c.next_attempt_at_ms <= now,
        webhook_deliveries.c.lease_until_ms < now,
    )
    teams = [t for t in exclude_teams if t is not None]
    if None in exclude_teams:
        query = query.where(webhook_deliveries.c.team_id.is_not(None))
    if teams:  # NOT IN is never true for a NULL team: the operator's rows are kept explicitly
        query = query.where(or_(webhook_deliveries.c.team_id.is_(None), webhook_deliveries.c.team_id.not_in(teams)))
    async with engine.connect() as conn:
        rows = (await conn.execute(query.order_by(webhook_deliveries.c.next_attempt_at_ms).limit(limit))).all()
    return [(r.id, r.team_id) for r in rows]


async def claim(engine: AsyncEngine, delivery_id: str, *, claim_ms: int) -> Delivery | None:
    now = now_ms()
    async with engine.begin() as conn:
        row = (
            await conn.execute(
                update(webhook_deliveries)
                .where(
                    webhook_deliveries.c.id == delivery_id,
                    webhook_deliveries.c.status == DeliveryStatus.PENDING,
                    webhook_deliveries.c.next_attempt_at_ms <= now,
                    webhook_deliveries.c.lease_until_ms < now,
                )
                .values(lease_until_ms=now + claim_ms)
                .returning(*webhook_deliveries.c)
            )
        ).first()
    return None if row is None else _delivery(row)


@dataclass(frozen=True, slots=True)
class Attempt:
    started_at_ms: int
    duration_ms: int
    status_code: int | None
    outcome: AttemptOutcome
    error: str | None


async def record(
    engine: AsyncEngine, claimed: Delivery, attempt: Attempt | None, *, status: DeliveryStatus, next_attempt_at_ms: int
) -> bool:
    """Record `attempt` (None: no request was made, e.g. the result expired) and move the delivery on; False
    when our claim had run out and another sender owns the row (the attempt is still recorded)."""
    now = now_ms()
    async with engine.begin() as conn:
        if attempt is not None:
            await conn.execute(
                insert(webhook_attempts).values(
                    delivery_id=claimed.id,
                    attempt=claimed.attempts + 1,
                    started_at_ms=attempt.started_at_ms,
                    duration_ms=attempt.duration_ms,
                    status_code=attempt.status_code,
                    outcome=attempt.outcome,
                    error=attempt.error[:1000] if attempt.error else None,
                )
            )
        result = await conn.execute(
            update(webhook_deliveries)
            .where(
                webhook_deliveries.c.id == claimed.id,
                webhook_deliveries.c.status == DeliveryStatus.PENDING,
                webhook_deliveries.c.lease_until_ms == claimed.lease_until_ms,
            )
            .values(
                status=status,
                attempts=webhook_deliveries.c.attempts + (1 if attempt is not None else 0),
                next_attempt_at_ms=next_attempt_at_ms,
                lease_until_ms=0,
                ended_at_ms=None if status == DeliveryStatus.PENDING else now,
            )
        )
    return bool(result.rowcount)


async def redeliver(engine: AsyncEngine, team_id: str, delivery_id: str) -> bool:
    """Send an ended delivery (delivered, failed or stopped) once more, now; False when it is not the team's,
    is still pending, or its result has expired (no attempt is ever made after that). If that attempt
    fails and the retry schedule has steps left, they follow as usual; otherwise it fails again."""
    now = now_ms()
    async with engine.begin() as conn:
        result = await conn.execute(
            update(webhook_deliveries)
            .where(
                webhook_deliveries.c.id == delivery_id,
                webhook_deliveries.c.team_id == team_id,
                webhook_deliveries.c.status != DeliveryStatus.PENDING,
                webhook_deliveries.c.give_up_at_ms > now,
            )
            .values(status=DeliveryStatus.PENDING, next_attempt_at_ms=now, lease_until_ms=0, ended_at_ms=None)
        )
    return bool(result.rowcount)


async def for_task(engine: AsyncEngine, task_id: str) -> list[dict[str, Any]]:
    """The deliveries of a task with every attempt, oldest first (the `GET .../webhooks` view)."""
    async with engine.connect() as conn:
        deliveries = (
            await conn.execute(
                select(webhook_deliveries)
                .where(webhook_deliveries.c.task_id == task_id)
                .order_by(webhook_deliveries.c.created_at_ms)
            )
        ).all()
        return await with_attempts(conn, deliveries)


async def for_team(
    engine: AsyncEngine, team_id: str, source: Source, *, limit: int, before_id: str | None = None
) -> list[dict[str, Any]]:
    """A team's deliveries of one source with every attempt, newest first; `before_id` pages back (the
    deliveries created before that one). Each item also carries its `payload` (the JSON sent)."""
    d = webhook_deliveries.c
    query = select(webhook_deliveries).where(d.source == source, d.team_id == team_id)
    async with engine.connect() as conn:
        if before_id is not None:
            anchor = (
                await conn.execute(
                    select(d.created_at_ms, d.id).where(d.id == before_id, d.source == source, d.team_id == team_id)
                )
            ).first()
            if anchor is None:
                return []
            query = query.where(tuple_(d.created_at_ms, d.id) < tuple_(anchor.created_at_ms, anchor.id))
        deliveries = (await conn.execute(query.order_by(d.created_at_ms.desc(), d.id.desc()).limit(limit))).all()
        views = await with_attempts(conn, deliveries)
    for view, row in zip(views, deliveries, strict=True):
        view["payload"] = orjson.loads(row.payload)
    return views


async def with_attempts(conn: AsyncConnection, deliveries: Sequence[Any]) -> list[dict[str, Any]]:
    """Each delivery row as its delivery log shows it, with every attempt, in one query for the attempts."""
    attempts = (
        await conn.execute(
            select(webhook_attempts)
            .where(webhook_attempts.c.delivery_id.in_([d.id for d in deliveries]))
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
    return [
        {
            "webhook_id": d.id,
            "event_type": d.event_type,
            "url": d.url,
            "status": d.status,
            "attempt_count": int(d.attempts),
            "next_attempt_at": int(d.next_attempt_at_ms) if d.status == DeliveryStatus.PENDING else None,
            "created_at": int(d.created_at_ms),
            "ended_at": None if d.ended_at_ms is None else int(d.ended_at_ms),
            "attempts": by_delivery.get(d.id, []),
        }
        for d in deliveries
    ]
