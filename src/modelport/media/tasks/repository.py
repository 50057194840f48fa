"""Task rows: creation with the balance freeze, and every status change as a compare-and-swap.

Money moves only inside the transaction of a status change that won its compare-and-swap
(`UPDATE media_tasks ... WHERE status = ...`), so a task settles exactly once, however many workers,
reconcilers, crashes or duplicate queue deliveries race on it:

- create: `task_hold` (available -> frozen) in the transaction that inserts the row;
- success: `task_release` of the frozen amount + `charge` of the actual price, with the result files' rows
  (`media.files.repository.insert_in`) and the webhook outbox row (`media.tasks.events`);
- failed / cancelled: `task_release` of all of it, with the outbox row.

A run is identified by `attempts` (incremented by each claim): the running worker renews its lease and
finishes only while `attempts` is still its own, so a worker whose lease ran out and was taken over cannot
finish the task a second time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import ColumnElement, and_, func, insert, or_, select, update
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts.tables import teams
from modelport.billing import key_budget, notify
from modelport.billing.key_budget import KeyHold
from modelport.billing.ledger import freeze_in, settle_in
from modelport.clock import now_ms
from modelport.media.files import repository as files_repo
from modelport.media.files.repository import FileRecord
from modelport.media.tasks.events import Event, enqueue_task_event
from modelport.media.tasks.states import UNFINISHED, TaskStatus, sources
from modelport.media.tasks.tables import media_tasks
from modelport.metrics import TASK_DURATION, TASKS_CREATED, TASKS_FINISHED

HOLD_KIND = "task_hold"
# PostgreSQL NOTIFY channel of task row changes (payload: the task id).
TASK_CHANNEL = "modelport_tasks"
RELEASE_KIND = "task_release"


@dataclass(frozen=True, slots=True)
class TaskRow:
    id: str
    team_id: str
    model_id: str
    status: TaskStatus
    input: dict[str, Any]
    seed: int
    frozen_micros: int
    cost_micros: int | None
    webhook_url: str | None
    attempts: int
    lease_until_ms: int | None
    deadline_ms: int
    resources: list[dict[str, Any]]
    metadata: dict[str, Any]
    error_code: str | None
    error_message: str | None
    created_at_ms: int
    started_at_ms: int | None
    ended_at_ms: int | None
    result_expires_at_ms: int | None
    trace_parent: str | None = None
    key_id: str | None = None
    key_period_ms: int | None = None  # the key's spend period the freeze is also held in (None: no limit)
    progress: int | None = None
    webhook_events: tuple[str, ...] | None = None  # None: the terminal events
    result_retention_seconds: int | None = None  # None: the deployment's


def _row(r: Row[Any]) -> TaskRow:
    return TaskRow(
        id=r.id,
        team_id=r.team_id,
        model_id=r.model_id,
        status=TaskStatus(r.status),
        input=dict(r.input),
        seed=int(r.seed),
        frozen_micros=int(r.frozen_micros),
        cost_micros=None if r.cost_micros is None else int(r.cost_micros),
        webhook_url=r.webhook_url,
        attempts=int(r.attempts),
        lease_until_ms=None if r.lease_until_ms is None else int(r.lease_until_ms),
        deadline_ms=int(r.deadline_ms),
        resources=list(r.resources or []),
        metadata=dict(r.result_metadata or {}),
        error_code=r.error_code,
        error_message=r.error_message,
        created_at_ms=int(r.created_at_ms),
        started_at_ms=None if r.started_at_ms is None else int(r.started_at_ms),
        ended_at_ms=None if r.ended_at_ms is None else int(r.ended_at_ms),
        result_expires_at_ms=None if r.result_expires_at_ms is None else int(r.result_expires_at_ms),
        trace_parent=r.trace_parent,
        key_id=r.key_id,
        key_period_ms=None if r.key_period_ms is None else int(r.key_period_ms),
        progress=None if r.progress is None else int(r.progress),
        webhook_events=tuple(r.webhook_events.split(",")) if r.webhook_events else None,
        result_retention_seconds=None if r.result_retention_seconds is None else int(r.result_retention_seconds),
    )


@dataclass(frozen=True, slots=True)
class NewTask:
    id: str
    team_id: str
    model_id: str
    input: dict[str, Any]
    seed: int
    price_micros: int
    webhook_url: str | None
    deadline_ms: int
    created_at_ms: int
    trace_parent: str | None = None
    key_id: str | None = None
    key: KeyHold | None = None  # the creating key's spend limit, held in the same transaction
    webhook_events: tuple[str, ...] | None = None
    result_retention_seconds: int | None = None


# What a change of the task puts in the webhook outbox: the event of its new state, or None (no event, or
# the task's creator did not choose it). `TaskService.webhook_event`.
EventOf = Callable[[TaskRow], Event | None]

CreateOutcome = Literal["created", "insufficient_balance", "key_budget_exceeded", "too_many_tasks", "claim_lost"]


async def create(
    engine: AsyncEngine,
    task: NewTask,
    *,
    max_unfinished: int,
    on_insert: Callable[[AsyncConnection, TaskRow], Awaitable[bool]] | None = None,
) -> tuple[CreateOutcome, int]:
    """Insert the task and freeze its price in one transaction; `(outcome, unfinished task count)`.

    The team row is locked first (PostgreSQL `FOR UPDATE`; SQLite's `BEGIN IMMEDIATE` locks the database),
    so the count of unfinished tasks and the insert cannot interleave with another creation of the team.
    `on_insert` runs in the same transaction with the new row (an Idempotency-Key's answer is recorded
    there); False rolls everything back (`claim_lost`)."""
    async with engine.begin() as conn:
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
            await key_budget.hold_in(conn, task.key, want_micros=task.price_micros, minimum_micros=task.price_micros)
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
        elif not await on_insert(conn, _row((await conn.execute(statement.returning(*media_tasks.c))).one())):
            await conn.rollback()
            return "claim_lost", unfinished
    TASKS_CREATED.labels(task.model_id).inc()
    return "created", unfinished + 1


def _count_ended(task: TaskRow) -> None:
    """Metrics of a won terminal transition (after its commit): counted once per task, like its money."""
    TASKS_FINISHED.labels(task.model_id, task.status).inc()
    if task.ended_at_ms is not None:
        TASK_DURATION.labels(task.model_id, task.status).observe(max(0, task.ended_at_ms - task.created_at_ms) / 1000)


async def get(engine: AsyncEngine, task_id: str, *, team_id: str | None = None) -> TaskRow | None:
    query = select(media_tasks).where(media_tasks.c.id == task_id)
    if team_id is not None:
        query = query.where(media_tasks.c.team_id == team_id)
    async with engine.connect() as conn:
        row = (await conn.execute(query)).first()
    return None if row is None else _row(row)


@dataclass(frozen=True, slots=True)
class ListFilter:
    status: TaskStatus | None = None
    model_id: str | None = None
    start_ms: int | None = None
    end_ms: int | None = None


async def list_page(
    engine: AsyncEngine, team_id: str, where: ListFilter, *, offset: int, limit: int
) -> tuple[list[TaskRow], int]:
    conds = [media_tasks.c.team_id == team_id]
    if where.status is not None:
        conds.append(media_tasks.c.status == where.status)
    if where.model_id is not None:
        conds.append(media_tasks.c.model_id == where.model_id)
    if where.start_ms is not None:
        conds.append(media_tasks.c.created_at_ms >= where.start_ms)
    if where.end_ms is not None:
        conds.append(media_tasks.c.created_at_ms < where.end_ms)
    async with engine.connect() as conn:
        total = int((await conn.execute(select(func.count()).select_from(media_tasks).where(*conds))).scalar_one())
        rows = (
            await conn.execute(
                select(media_tasks)
                .where(*conds)
                .order_by(media_tasks.c.created_at_ms.desc(), media_tasks.c.id.desc())
                .offset(offset)
                .limit(limit)
            )
        ).all()
    return [_row(r) for r in rows], total


# -- a run ------------------------------------------------------------------------------------------------


async def claim(
    engine: AsyncEngine,
    task_id: str,
    *,
    lease_ms: int,
    max_attempts: int,
    worker: str,
    outbox: EventOf | None = None,
) -> TaskRow | None:
    """Start a run: `queued`, or `processing` whose lease ran out (its worker died), becomes `processing`
    with a new lease and `attempts + 1`. None when another worker holds it, it has ended, its attempts are
    used up or its deadline passed (the caller then checks whether to fail it). The first run writes the
    `task.started` webhook row (when the creator chose it) in the same transaction."""
    now = now_ms()
    stmt = (
        update(media_tasks)
        .where(
            media_tasks.c.id == task_id,
            media_tasks.c.attempts < max_attempts,
            media_tasks.c.deadline_ms > now,
            media_tasks.c.status.in_(sources(TaskStatus.PROCESSING)),
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
    async with engine.begin() as conn:
        row = (await conn.execute(stmt)).first()
        if row is None:
            return None
        task = _row(row)
        if task.attempts == 1 and outbox is not None:
            await _enqueue_event(conn, task, outbox)
        await notify_in(conn, task.id)
    return task


async def run_state(engine: AsyncEngine, task_id: str) -> tuple[TaskStatus, int] | None:
    """`(status, attempts)` of a task: what a running worker compares with its own run."""
    async with engine.connect() as conn:
        row = (
            await conn.execute(select(media_tasks.c.status, media_tasks.c.attempts).where(media_tasks.c.id == task_id))
        ).first()
    return None if row is None else (TaskStatus(row.status), int(row.attempts))


async def set_progress(
    engine: AsyncEngine,
    task_id: str,
    run: int,
    progress: int,
    *,
    outbox: EventOf | None = None,
) -> bool:
    """Record run `run`'s progress (and, when `outbox` is given, a `task.progress` webhook row if the creator
    chose it); False when the run no longer owns the task (cancelled, past its deadline, taken over)."""
    async with engine.begin() as conn:
        row = (
            await conn.execute(
                update(media_tasks).where(*_run_owns(task_id, run)).values(progress=progress).returning(*media_tasks.c)
            )
        ).first()
        if row is None:
            return False
        task = _row(row)
        if outbox is not None:
            await _enqueue_event(conn, task, outbox)
        await notify_in(conn, task_id)
    return True


def _run_owns(task_id: str, run: int) -> tuple[ColumnElement[bool], ...]:
    """Run `run` still owns the task: it is running, and no later run has taken it over."""
    return (media_tasks.c.id == task_id, media_tasks.c.status == TaskStatus.PROCESSING, media_tasks.c.attempts == run)


async def queue_position(engine: AsyncEngine, task: TaskRow) -> int:
    async with engine.connect() as conn:
        return await queue_position_in(conn, task)


async def queue_position_in(conn: AsyncConnection, task: TaskRow) -> int:
    """1 + the queued tasks (all teams) created before this one: workers take the oldest first."""
    ahead = (
        await conn.execute(
            select(func.count())
            .select_from(media_tasks)
            .where(
                media_tasks.c.status == TaskStatus.QUEUED,
                or_(
                    media_tasks.c.created_at_ms < task.created_at_ms,
                    and_(media_tasks.c.created_at_ms == task.created_at_ms, media_tasks.c.id < task.id),
                ),
            )
        )
    ).scalar_one()
    return int(ahead) + 1


async def renew(engine: AsyncEngine, task_id: str, run: int, *, lease_ms: int) -> bool:
    """Extend the lease of run `run`; False when the run no longer owns the task."""
    async with engine.begin() as conn:
        result = await conn.execute(
            update(media_tasks).where(*_run_owns(task_id, run)).values(lease_until_ms=now_ms() + lease_ms)
        )
    return bool(result.rowcount)


@dataclass(frozen=True, slots=True)
class StoredFile:
    """A result file already in the store (`media.files.stored`); its row is inserted with the success
    transition."""

    file_id: str
    storage_key: str
    type: str
    mime_type: str
    name: str
    size_bytes: int
    width: int | None
    height: int | None
    format: str
    role: str

    def record(self, team_id: str, *, created_at_ms: int, expires_at_ms: int) -> FileRecord:
        return FileRecord(
            id=self.file_id,
            team_id=team_id,
            type=self.type,
            mime_type=self.mime_type,
            name=self.name,
            size_bytes=self.size_bytes,
            storage_key=self.storage_key,
            created_at_ms=created_at_ms,
            expires_at_ms=expires_at_ms,
        )


async def finish_success(
    engine: AsyncEngine,
    task_id: str,
    run: int,
    *,
    files: Sequence[StoredFile],
    cost_micros: int,
    metadata: dict[str, Any],
    result_expires_at_ms: int,
    outbox: EventOf,
) -> TaskRow | None:
    """`processing` (this run) -> `success`, charging `cost_micros` (at most what was frozen) and releasing the
    rest, inserting the files' rows and the webhook outbox row: all in one transaction. None if lost."""
    now = now_ms()
    resources = [
        {"file_id": f.file_id, "type": f.type, "width": f.width, "height": f.height, "format": f.format, "role": f.role}
        for f in files
    ]
    async with engine.begin() as conn:
        row = (
            await conn.execute(
                update(media_tasks)
                .where(*_run_owns(task_id, run))
                .values(
                    status=TaskStatus.SUCCESS,
                    resources=resources,
                    result_metadata=metadata,
                    ended_at_ms=now,
                    result_expires_at_ms=result_expires_at_ms,
                    lease_until_ms=None,
                    progress=100,
                    cost_micros=func.least(media_tasks.c.frozen_micros, cost_micros)
                    if conn.dialect.name == "postgresql"
                    else func.min(media_tasks.c.frozen_micros, cost_micros),
                )
                .returning(*media_tasks.c)
            )
        ).first()
        if row is None:
            return None
        task = _row(row)
        for f in files:
            record = f.record(task.team_id, created_at_ms=now, expires_at_ms=result_expires_at_ms)
            await files_repo.insert_in(conn, record, task_id=task.id)
        await _settle_and_notify(conn, task, cost=task.cost_micros or 0, outbox=outbox)
    _count_ended(task)
    return task


async def finish_failure(
    engine: AsyncEngine,
    task_id: str,
    *,
    status: Literal[TaskStatus.FAILED, TaskStatus.CANCELLED],
    code: str,
    message: str,
    outbox: EventOf,
    run: int | None = None,
    from_statuses: Sequence[TaskStatus] | None = None,
    past_deadline: bool = False,
) -> TaskRow | None:
    """An unfinished task -> `failed`/`cancelled`, releasing all it froze, with the outbox row; None if the
    compare-and-swap lost (the task had already ended, or is no longer in `from_statuses` / run `run`)."""
    now = now_ms()
    allowed = sources(status) if from_statuses is None else from_statuses
    conds = [media_tasks.c.id == task_id, media_tasks.c.status.in_(list(allowed))]
    if run is not None:
        conds.append(media_tasks.c.attempts == run)
    if past_deadline:
        conds.append(media_tasks.c.deadline_ms <= now)
    async with engine.begin() as conn:
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
        task = _row(row)
        await _settle_and_notify(conn, task, cost=0, outbox=outbox)
    _count_ended(task)
    return task


async def _settle_and_notify(conn: AsyncConnection, task: TaskRow, *, cost: int, outbox: EventOf) -> None:
    await settle_in(
        conn, task.team_id, held_micros=task.frozen_micros, cost_micros=cost, ref=task.id, release_kind=RELEASE_KIND
    )
    if task.key_id is not None and task.key_period_ms is not None:  # after the team's row: the lock order
        await key_budget.settle_in(conn, [(task.key_id, task.key_period_ms, task.frozen_micros, cost)])
    if cost:  # a charge may cross the team's notification thresholds (billing.notify)
        keys = (
            []
            if task.key_id is None or task.key_period_ms is None
            else [(task.team_id, task.key_id, task.key_period_ms)]
        )
        await notify.after_settlement(conn, [task.team_id], keys)
    await _enqueue_event(conn, task, outbox)
    await notify_in(conn, task.id)


async def notify_in(conn: AsyncConnection, task_id: str) -> None:
    """On PostgreSQL, tell listening processes (live status streams) that the task's row changed; the
    notification is delivered at commit, so a listener always reads the new row."""
    if conn.dialect.name == "postgresql":
        await conn.execute(select(func.pg_notify(TASK_CHANNEL, task_id)))


async def _enqueue_event(conn: AsyncConnection, task: TaskRow, outbox: EventOf) -> None:
    """The webhook event of the change (if the task has a webhook and `outbox` says the change fires one),
    in the change's transaction."""
    if task.webhook_url is None:
        return
    event = outbox(task)
    if event is not None:
        await enqueue_task_event(conn, event, team_id=task.team_id, task_id=task.id, url=task.webhook_url)


# -- the reconciler's queries -----------------------------------------------------------------------------


async def past_deadline(engine: AsyncEngine, *, limit: int = 500) -> list[str]:
    now = now_ms()
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                select(media_tasks.c.id)
                .where(media_tasks.c.status.in_(UNFINISHED), media_tasks.c.deadline_ms <= now)
                .limit(limit)
            )
        ).all()
    return [r.id for r in rows]


async def unfinished_counts(engine: AsyncEngine) -> dict[TaskStatus, int]:
    """Tasks waiting for a worker and running, all teams (the queue-depth gauge)."""
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                select(media_tasks.c.status, func.count())
                .where(media_tasks.c.status.in_(UNFINISHED))
                .group_by(media_tasks.c.status)
            )
        ).all()
    counts = {TaskStatus(r[0]): int(r[1]) for r in rows}
    return {status: counts.get(status, 0) for status in UNFINISHED}


@dataclass(frozen=True, slots=True)
class Backlog:
    """The queued tasks (waiting for a worker), all teams."""

    queued: int
    oldest_id: str | None
    oldest_created_at_ms: int | None
    older_than_cutoff: int  # queued tasks created before the cutoff asked for (0 without one)


async def backlog(engine: AsyncEngine, *, cutoff_ms: int | None = None) -> Backlog:
    """Counts and the oldest queued task, through `ix_media_tasks_status_created` (its first entry)."""
    queued = media_tasks.c.status == TaskStatus.QUEUED
    async with engine.connect() as conn:
        oldest = (
            await conn.execute(
                select(media_tasks.c.id, media_tasks.c.created_at_ms)
                .where(queued)
                .order_by(media_tasks.c.created_at_ms, media_tasks.c.id)
                .limit(1)
            )
        ).first()
        if oldest is None:
            return Backlog(0, None, None, 0)
        count = int(await conn.scalar(select(func.count()).select_from(media_tasks).where(queued)) or 0)
        older = 0
        if cutoff_ms is not None and oldest.created_at_ms < cutoff_ms:
            older = int(
                await conn.scalar(
                    select(func.count()).select_from(media_tasks).where(queued, media_tasks.c.created_at_ms < cutoff_ms)
                )
                or 0
            )
    return Backlog(count, oldest.id, int(oldest.created_at_ms), older)


async def needing_a_worker(engine: AsyncEngine, *, queued_before_ms: int, limit: int = 500) -> list[str]:
    """Queued tasks older than `queued_before_ms`, and running tasks whose lease ran out (their worker died)."""
    now = now_ms()
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                select(media_tasks.c.id)
                .where(
                    or_(
                        and_(media_tasks.c.status == TaskStatus.QUEUED, media_tasks.c.created_at_ms < queued_before_ms),
                        and_(media_tasks.c.status == TaskStatus.PROCESSING, media_tasks.c.lease_until_ms < now),
                    )
                )
                .order_by(media_tasks.c.created_at_ms)
                .limit(limit)
            )
        ).all()
    return [r.id for r in rows]
