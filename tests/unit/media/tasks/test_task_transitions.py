"""The transitions take every compare-and-swap's source statuses from `states.TRANSITIONS`: a move the table
does not allow is refused before it reaches the database."""

from __future__ import annotations

from typing import cast

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.media.tasks.effects import TaskEffects
from modelport.media.tasks.states import TaskStatus
from modelport.media.tasks.transitions import TaskTransitions


async def _nothing(*_args: object) -> None:
    return None


def transitions() -> TaskTransitions:
    # No engine: every refusal here comes before the database is touched.
    return TaskTransitions(cast(AsyncEngine, None), TaskEffects(settled=(), outbox=_nothing))


@pytest.mark.parametrize("source", [TaskStatus.SUCCESS, TaskStatus.FAILED, TaskStatus.CANCELLED])
async def test_an_ended_task_is_never_asked_to_move_again(source: TaskStatus) -> None:
    with pytest.raises(ValueError, match="no task moves from"):
        await transitions().finish_failure(
            "task_x", status=TaskStatus.FAILED, code="x", message="x", from_statuses=(source,)
        )


async def test_a_move_the_table_allows_reaches_the_database() -> None:
    # Allowed: it goes on to open a transaction, on the engine this test does not have.
    with pytest.raises(AttributeError):
        await transitions().finish_failure(
            "task_x", status=TaskStatus.CANCELLED, code="x", message="x", from_statuses=(TaskStatus.QUEUED,)
        )
