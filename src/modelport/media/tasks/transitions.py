"""Task rows' writes: creation with the balance freeze, and every status change as a compare-and-swap.

Every change's `WHERE` takes its allowed source statuses from `states.TRANSITIONS` (`_moving_to`), so the
table in `states.py` is the one statement of which moves exist. Money moves only inside the transaction
of a status change that won its compare-and-swap (`UPDATE media_tasks ... WHERE status = ...`), so a task
settles exactly once, however many workers, reconcilers, crashes or duplicate queue deliveries race on it:

- create: `task_hold` (available -> frozen) in the transaction that inserts the row;
- success: the settled effects (`effects.TaskEffects.settled`: the ledger's release and charge, the key's
  spend, notification thresholds) with the result files' rows (`media.files.repository.insert_in`) and the
  webhook outbox row (`TaskEffects.outbox`);
- failed / cancelled: the settled effects at a cost of 0 (all released), with the outbox row.

What an ending does besides its row is handed in at assembly (`apps/assemble.py`), not imported here.

A run is identified by `attempts` (incremented by each claim): the running worker renews its lease and
finishes only while `attempts` is still its own, so a worker whose lease ran out and was taken over cannot
finish the task a second time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from sqlalchemy import ColumnElement, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts.tables import teams
from modelport.billing import key_budget
from modelport.billing.ledger import freeze_in
from modelport.clock import now_ms
from modelport.media.files import repository as files_repo
from modelport.media.tasks.effects import TaskEffects
from modelport.media.tasks.rows import NewTask, StoredFile, TaskRow, notify_in, row_of
from modelport.media.tasks.states import UNFINISHED, TaskStatus, sources
from modelport.media.tasks.tables import media_tasks
from modelport.metrics import TASK_DURATION, TASKS_CREATED, TASKS_FINISHED

HOLD_KIND = "task_hold"

CreateOutcome = Literal["created", "insufficient_balance", "key_budget_exceeded", "too_many_tasks", "claim_lost"]


def _moving_to(target: TaskStatus, from_statuses: Sequence[TaskStatus] | None = None) -> ColumnElement[bool]:
    """The compare-and-swap's status condition of a move to `target`: the sources `states.TRANSITIONS`
    allows, or the narrower `from_statuses` a caller asks for (a move the table does not allow is a bug,
    refused before it reaches the database)."""
    allowed = sources(target)
    if from_statuses is None:
        return media_tasks.c.status.in_(allowed)
    refused = [status for status in from_statuses if status not in allowed]
    if refused:
        raise ValueError(f"no task moves from {', '.join(refused)} to {target}")
    return media_tasks.c.status.in_(list(from_statuses))


def _run_owns(task_id: str, run: int) -> tuple[ColumnElement[bool], ...]:
    """Run `run` still owns the task: it is running, and no later run has taken it over."""
    return (media_tasks.c.id == task_id, media_tasks.c.status == TaskStatus.PROCESSING, media_tasks.c.attempts == run)


def _count_ended(task: TaskRow) -> None:
    """Metrics of a won terminal transition (after its commit): counted once per task, like its money."""
    TASKS_FINISHED.labels(task.model_id, task.status).inc()
    if task.ended_at_ms is not None:
        TASK_DURATION.labels(task.model_id, task.status).observe(max(0, task.ended_at_ms - task.created_at_ms) / 1000)


class TaskTransitions:
    """The writes of task rows, on one engine, with the effects of a change handed in (`effects.py`)."""

    def __init__(self, engine: AsyncEngine, effects: TaskEffects) -> None:
        self._engine = engine
        self._effects = effects

    async def create(
        self,
        task: NewTask,
        *,
        max_unfinished: int,
        on_insert: Callable[[AsyncConnection, TaskRow], Awaitable[bool]] | None = None,
    ) -> tuple[CreateOutcome, int]:
        """Insert the task and freeze its price in one transaction; `(outcome, unfinished task count)`.

        The team row is locked first (PostgreSQL `FOR UPDATE`; SQLite's `BEGIN IMMEDIATE` locks the
        database), so the count of unfinished tasks and the insert cannot interleave with another creation
        of the team. `on_insert` runs in the same transaction with the new row (an Idempotency-Key's answer
        is recorded there); False rolls everything back (`claim_lost`)."""
        async with self._engine.begin() as conn:
            lock = select(teams.c.id).where(teams.c.id == task.team_id)
            if conn.dialect.name == "postgresql":
                lock = lock.with_for_update()
            await conn.execute(lock)
            unfinished = int(
                (
                    await conn.execute(
                        select(func.count())
                        .select_from(media_tasks)
                        .where(media_tasks.c.team_id == task.team_id, media_tasks.c.status.in_(UNFINISHED))
                    )
                ).scalar_one()
            )
            if unfinished >= max_unfinished:
                return "too_many_tasks", unfinished
            if await freeze_in(conn, task.team_id, task.price_micros, ref=task.id, kind=HOLD_KIND) is None:
                await conn.rollback()
                return "insufficient_balance", unfinished
            if task.key is not None and (
                await key_budget.hold_in(
                    conn, task.key, want_micros=task.price_micros, minimum_micros=task.price_micros
                )
                is None
            ):
                await conn.rollback()
                return "key_budget_exceeded", unfinished
            statement = insert(media_tasks).values(
                id=task.id,
                team_id=task.team_id,
                model_id=task.model_id,
                status=TaskStatus.QUEUED,
                input=task.input,
                seed=task.seed,
                frozen_micros=task.price_micros,
                webhook_url=task.webhook_url,
                attempts=0,
                deadline_ms=task.deadline_ms,
                created_at_ms=task.created_at_ms,
                trace_parent=task.trace_parent,
                webhook_events=",".join(task.webhook_events) if task.webhook_events else None,
                result_retention_seconds=task.result_retention_seconds,
                key_id=task.key_id,
                key_period_ms=None if task.key is None else task.key.period_ms,
            )
            if on_insert is None:
                await conn.execute(statement)
            elif not await on_insert(conn, row_of((await conn.execute(statement.returning(*media_tasks.c))).one())):
                await conn.rollback()
                return "claim_lost", unfinished
        TASKS_CREATED.labels(task.model_id).inc()
        return "created", unfinished + 1

    # -- a run --------------------------------------------------------------------------------------------

    async def claim(
        self, task_id: str, *, lease_ms: int, max_attempts: int, worker: str, announce: bool = False
    ) -> TaskRow | None:
        """Start a run: `queued`, or `processing` whose lease ran out (its worker died), becomes `processing`
        with a new lease and `attempts + 1`. None when another worker holds it, it has ended, its attempts
        are used up or its deadline passed (the caller then checks whether to fail it). With `announce`, the
        first run writes the `task.started` webhook row (when the creator chose it) in the same
        transaction."""
        now = now_ms()
        stmt = (
            update(media_tasks)
            .where(
                media_tasks.c.id == task_id,
                media_tasks.c.attempts < max_attempts,
                media_tasks.c.deadline_ms > now,
                _moving_to(TaskStatus.PROCESSING),
                # A running task only once its lease ran out (its worker died or stalled).
                or_(media_tasks.c.status != TaskStatus.PROCESSING, media_tasks.c.lease_until_ms < now),
            )
            .values(
                status=TaskStatus.PROCESSING,
                attempts=media_tasks.c.attempts + 1,
                lease_until_ms=now + lease_ms,
                claimed_by=worker,
                started_at_ms=func.coalesce(media_tasks.c.started_at_ms, now),
            )
            .returning(*media_tasks.c)
        )
        async with self._engine.begin() as conn:
            row = (await conn.execute(stmt)).first()
            if row is None:
                return None
            task = row_of(row)
            if task.attempts == 1 and announce:
                await self._effects.outbox(conn, task)
            await notify_in(conn, task.id)
        return task

    async def set_progress(self, task_id: str, run: int, progress: int, *, announce: bool = False) -> bool:
        """Record run `run`'s progress (and, with `announce`, a `task.progress` webhook row if the creator
        chose it); False when the run no longer owns the task (cancelled, past its deadline, taken over)."""
        async with self._engine.begin() as conn:
            row = (
                await conn.execute(
                    update(media_tasks)
                    .where(*_run_owns(task_id, run))
                    .values(progress=progress)
                    .returning(*media_tasks.c)
                )
            ).first()
            if row is None:
                return False
            if announce:
                await self._effects.outbox(conn, row_of(row))
            await notify_in(conn, task_id)
        return True

    async def renew(self, task_id: str, run: int, *, lease_ms: int) -> bool:
        """Extend the lease of run `run`; False when the run no longer owns the task."""
        async with self._engine.begin() as conn:
            result = await conn.execute(
                update(media_tasks).where(*_run_owns(task_id, run)).values(lease_until_ms=now_ms() + lease_ms)
            )
        return bool(result.rowcount)

    # -- the end ------------------------------------------------------------------------------------------

    async def finish_success(
        self,
        task_id: str,
        run: int,
        *,
        files: Sequence[StoredFile],
        cost_micros: int,
        metadata: dict[str, Any],
        result_expires_at_ms: int,
    ) -> TaskRow | None:
        """`processing` (this run) -> `success`, charging `cost_micros` (at most what was frozen) and releasing
        the rest, inserting the files' rows and the webhook outbox row: all in one transaction. None if
        lost."""
        now = now_ms()
        resources = [
            {
                "file_id": f.file_id,
                "type": f.type,
                "width": f.width,
                "height": f.height,
                "format": f.format,
                "role": f.role,
            }
            for f in files
        ]
        async with self._engine.begin() as conn:
            least = func.least if conn.dialect.name == "postgresql" else func.min
            row = (
                await conn.execute(
                    update(media_tasks)
                    .where(
                        media_tasks.c.id == task_id,
                        _moving_to(TaskStatus.SUCCESS),
                        media_tasks.c.attempts == run,
                    )
                    .values(
                        status=TaskStatus.SUCCESS,
                        resources=resources,
                        result_metadata=metadata,
                        ended_at_ms=now,
                        result_expires_at_ms=result_expires_at_ms,
                        lease_until_ms=None,
                        progress=100,
                        cost_micros=least(media_tasks.c.frozen_micros, cost_micros),
                    )
                    .returning(*media_tasks.c)
                )
            ).first()
            if row is None:
                return None
            task = row_of(row)
            for f in files:
                record = f.record(task.team_id, created_at_ms=now, expires_at_ms=result_expires_at_ms)
                await files_repo.insert_in(conn, record, task_id=task.id)
            await self._ended(conn, task, task.cost_micros or 0)
        _count_ended(task)
        return task

    async def finish_failure(
        self,
        task_id: str,
        *,
        status: Literal[TaskStatus.FAILED, TaskStatus.CANCELLED],
        code: str,
        message: str,
        run: int | None = None,
        from_statuses: Sequence[TaskStatus] | None = None,
        past_deadline: bool = False,
    ) -> TaskRow | None:
        """An unfinished task -> `failed`/`cancelled`, releasing all it froze, with the outbox row; None if
        the compare-and-swap lost (the task had already ended, or is no longer in `from_statuses` / run
        `run`)."""
        now = now_ms()
        conds = [media_tasks.c.id == task_id, _moving_to(status, from_statuses)]
        if run is not None:
            conds.append(media_tasks.c.attempts == run)
        if past_deadline:
            conds.append(media_tasks.c.deadline_ms <= now)
        async with self._engine.begin() as conn:
            row = (
                await conn.execute(
                    update(media_tasks)
                    .where(*conds)
                    .values(
                        status=status,
                        error_code=code,
                        error_message=message[:2000],
                        ended_at_ms=now,
                        lease_until_ms=None,
                        cost_micros=0,
                    )
                    .returning(*media_tasks.c)
                )
            ).first()
            if row is None:
                return None
            task = row_of(row)
            await self._ended(conn, task, 0)
        _count_ended(task)
        return task

    async def _ended(self, conn: AsyncConnection, task: TaskRow, cost_micros: int) -> None:
        """In the ending's transaction: the settled effects in their order, the webhook row, the NOTIFY."""
        for effect in self._effects.settled:
            await effect(conn, task, cost_micros)
        await self._effects.outbox(conn, task)
        await notify_in(conn, task.id)
