"""The write side of the webhook outbox: one `webhook_deliveries` row per event, inserted in the caller's
transaction (so the event exists exactly when the change it reports does).

Every source shares it: a task's webhook (`task`), a team notification (`notification`) and an operator
alert (`operator`, no team). It lives below billing and the features so that settlement code can enqueue
in the transaction that moves the money; the sender (`media.webhooks`) delivers every row the same way.
"""

from __future__ import annotations

import secrets
from typing import Literal

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from modelport.clock import now_ms
from modelport.settings import WebhookSettings
from modelport.storage.tables import webhook_deliveries

Source = Literal["task", "notification", "operator"]
SOURCES: tuple[Source, ...] = ("task", "notification", "operator")


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
            status="pending",
            attempts=0,
            next_attempt_at_ms=now,
            lease_until_ms=0,
            give_up_at_ms=schedule_end_ms(now) if give_up_at_ms is None else give_up_at_ms,
            created_at_ms=now,
        )
    )
    return row_id
