"""The API's reads of task rows (one team's): a task, a page of them, a queued task's place, a run's state."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.media.tasks.rows import TaskRow, row_of
from modelport.media.tasks.states import TaskStatus
from modelport.media.tasks.tables import media_tasks


async def get(engine: AsyncEngine, task_id: str, *, team_id: str | None = None) -> TaskRow | None:
    query = select(media_tasks).where(media_tasks.c.id == task_id)
    if team_id is not None:
        query = query.where(media_tasks.c.team_id == team_id)
    async with engine.connect() as conn:
        row = (await conn.execute(query)).first()
    return None if row is None else row_of(row)


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
    return [row_of(r) for r in rows], total


async def run_state(engine: AsyncEngine, task_id: str) -> tuple[TaskStatus, int] | None:
    """`(status, attempts)` of a task: what a running worker compares with its own run."""
    async with engine.connect() as conn:
        row = (
            await conn.execute(select(media_tasks.c.status, media_tasks.c.attempts).where(media_tasks.c.id == task_id))
        ).first()
    return None if row is None else (TaskStatus(row.status), int(row.attempts))


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
