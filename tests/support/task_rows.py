"""Task rows written without the API: the transitions with the stock effects of an ending (as
`apps/assemble.py` hands them in) and the webhook events `event_of` names (none by default)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.media.tasks.effects import (
    EventOf,
    TaskEffects,
    notify_crossings,
    release_freeze,
    settle_key_budget,
    webhook_outbox,
)
from modelport.media.tasks.transitions import TaskTransitions


def task_transitions(engine: AsyncEngine, event_of: EventOf = lambda _task: None) -> TaskTransitions:
    effects = TaskEffects(
        settled=(release_freeze, settle_key_budget, notify_crossings), outbox=webhook_outbox(event_of)
    )
    return TaskTransitions(engine, effects)
