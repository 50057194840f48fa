"""The webhook outbox: delivery rows and their attempts, for every source (a task's change, a team
notification, an operator alert: `registry.py`).

`enqueue` inserts one `webhook_deliveries` row per event in the caller's transaction, so the event exists
exactly when the change it reports does (settlement code enqueues in the transaction that moves the money).

A sender claims a due row with a compare-and-swap on `lease_until_ms` and records its attempt together with
the row's next state only while that claim is still its own; a sender that died leaves the claim to run
out, and another takes the delivery over. Delivery is at least once: a receiver may see an event twice
(same `webhook-id`) if a sender dies after the receiver answered and before the attempt was recorded.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import insert, or_, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.clock import now_ms
from modelport.settings import WebhookSettings
from modelport.webhooks.registry import EVENT_TYPES, SOURCES, Source
from modelport.webhooks.states import AttemptOutcome, DeliveryStatus
from modelport.webhooks.tables import webhook_attempts, webhook_deliveries

__all__ = ["SOURCES", "Source"]  # the registry's words, for callers that name a source


def new_delivery_id() -> str:
    """The delivery's id: its `webhook-id` header, the same on every attempt."""
    return "msg_" + secrets.token_hex(16)


def retry_window_ms(settings: WebhookSettings) -> int:
    """How long the retry schedule can run, at most: the give-up time of an event that reports no result
    (a notification or an operator alert), counted from its enqueueing. Each delay can stretch by the
    jitter, and each attempt can take the full timeout; a minute on top covers claims and polling."""
    delays = sum(settings.schedule_seconds) * (1 + settings.jitter_fraction)
    attempts = len(settings.schedule_seconds) * (settings.timeout_seconds + settings.poll_interval_seconds)
    return int((delays + attempts + 60) * 1000)


# The retry window of this process's schedule (`use_schedule`, called once at assembly): settlement code
# that enqueues a notification has no settings at hand, and every process of a deployment has the same.
_window_ms = retry_window_ms(WebhookSettings())


def use_schedule(settings: WebhookSettings) -> None:
    global _window_ms
    _window_ms = retry_window_ms(settings)


def schedule_end_ms(at_ms: int | None = None) -> int:
    """The give-up time of a delivery that reports no task, enqueued at `at_ms` (default now)."""
    return (now_ms() if at_ms is None else at_ms) + _window_ms


async def enqueue(
    conn: AsyncConnection,
    *,
    team_id: str | None,
    url: str,
    event_type: str,
    payload: str,
    source: Source,
    give_up_at_ms: int | None = None,
    task_id: str | None = None,
    delivery_id: str | None = None,
) -> str:
    """Insert a pending delivery of `payload` (the exact JSON body every attempt sends) to `url`, due now;
    its id (`delivery_id` or a new one). `team_id` None: an operator alert (signed with the operator's
    secret, not a team's). `give_up_at_ms`: no attempt after it; a task's result expiry (required for task
    rows), by default the retry schedule's end. The caller commits the row with the change it reports."""
    if source == "task" and (task_id is None or give_up_at_ms is None):
        raise ValueError("a task delivery needs its task_id and its result's expiry")
    if (source == "operator") != (team_id is None):
        raise ValueError("an operator delivery has no team_id; every other delivery has one")
    if EVENT_TYPES.get(event_type) != source:
        raise ValueError(f"{event_type!r} is not a {source} event type (webhooks/registry.py)")
    now = now_ms()
    row_id = delivery_id or new_delivery_id()
    await conn.execute(
        insert(webhook_deliveries).values(
            id=row_id,
            task_id=task_id,
            team_id=team_id,
            source=source,
            url=url,
            event_type=event_type,
            payload=payload,
            status=DeliveryStatus.PENDING,
            attempts=0,
            next_attempt_at_ms=now,
            lease_until_ms=0,
            give_up_at_ms=schedule_end_ms(now) if give_up_at_ms is None else give_up_at_ms,
            created_at_ms=now,
        )
    )
    return row_id


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


async def is_pending(conn: AsyncConnection, source: Source, *, team_id: str, event_type: str, at_ms: int) -> bool:
    """Whether the team has a delivery of `event_type` still to be tried at `at_ms` (in the caller's
    transaction: a notification test sends one at a time)."""
    d = webhook_deliveries.c
    pending = await conn.execute(
        select(d.id).where(
            d.source == source,
            d.team_id == team_id,
            d.event_type == event_type,
            d.status == DeliveryStatus.PENDING,
            d.give_up_at_ms > at_ms,
        )
    )
    return pending.first() is not None


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


async def for_operator(engine: AsyncEngine, *, limit: int) -> list[dict[str, Any]]:
    """The latest operator events (no team), newest first, with every attempt and their `payload`; without
    their URL (the operator's own hook URL, often its credential, is not shown back)."""
    d = webhook_deliveries.c
    async with engine.connect() as conn:
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
        del view["url"]
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
