"""What a task's status change does besides its own row, in the same transaction: handed to
`transitions.TaskTransitions` at assembly (`apps/assemble.py`), not hard-wired into it.

- `TaskEffects.settled`: the effects of an ended task's money, in order. The stock ones: `release_freeze`
  (the ledger: the freeze released, the price charged), `settle_key_budget` (the creating key's spend
  period, after the team's row: the lock order), `notify_crossings` (a charge that crosses a team's
  notification thresholds queues that event, `billing.notify`).
- `TaskEffects.outbox`: the change's webhook row (`webhook_outbox`: the event the tasks feature's
  `EventOf` names, written with `media.tasks.events.enqueue_task_event`), on a claim, a progress report
  and an ending alike.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncConnection

from modelport.billing import key_budget, notify
from modelport.billing.ledger import settle_in
from modelport.media.tasks.events import Event, enqueue_task_event
from modelport.media.tasks.rows import TaskRow

RELEASE_KIND = "task_release"

# What a change of the task puts in the webhook outbox: the event of its new state, or None (no event, or
# the task's creator did not choose it). `task_events.TaskEvents`.
EventOf = Callable[[TaskRow], Event | None]
# Writes the change's webhook row, if any, in the change's transaction.
Outbox = Callable[[AsyncConnection, TaskRow], Awaitable[None]]


class Settled(Protocol):
    """One effect of a task that ended (won its compare-and-swap to a terminal status) and cost
    `cost_micros` (0 unless it succeeded), run in the ending's transaction."""

    async def __call__(self, conn: AsyncConnection, task: TaskRow, cost_micros: int) -> None: ...


@dataclass(frozen=True, slots=True)
class TaskEffects:
    settled: tuple[Settled, ...]
    outbox: Outbox


async def release_freeze(conn: AsyncConnection, task: TaskRow, cost_micros: int) -> None:
    """The team's ledger: release all that was frozen at creation, charge the cost."""
    await settle_in(
        conn,
        task.team_id,
        held_micros=task.frozen_micros,
        cost_micros=cost_micros,
        ref=task.id,
        release_kind=RELEASE_KIND,
    )


async def settle_key_budget(conn: AsyncConnection, task: TaskRow, cost_micros: int) -> None:
    """The creating key's spend period, when it has a spend limit (after the team's row: the lock order)."""
    if task.key_id is not None and task.key_period_ms is not None:
        await key_budget.settle_in(conn, [(task.key_id, task.key_period_ms, task.frozen_micros, cost_micros)])


async def notify_crossings(conn: AsyncConnection, task: TaskRow, cost_micros: int) -> None:
    """A charge may cross the team's (and the key's) notification thresholds (`billing.notify`)."""
    if not cost_micros:
        return
    keys = (
        [] if task.key_id is None or task.key_period_ms is None else [(task.team_id, task.key_id, task.key_period_ms)]
    )
    await notify.after_settlement(conn, [task.team_id], keys)


def webhook_outbox(event_of: EventOf) -> Outbox:
    """The outbox writer for the events `event_of` names (a task without a webhook URL has none)."""

    async def enqueue(conn: AsyncConnection, task: TaskRow) -> None:
        if task.webhook_url is None:
            return
        event = event_of(task)
        if event is not None:
            await enqueue_task_event(conn, event, team_id=task.team_id, task_id=task.id, url=task.webhook_url)

    return enqueue
