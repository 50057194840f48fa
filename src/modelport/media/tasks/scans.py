"""Scans of the task rows over all teams: the reconciler's (deadlines passed, tasks needing a worker), the
queue-depth gauge's and the operator alerts' (the backlog)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.clock import now_ms
from modelport.media.tasks.states import UNFINISHED, TaskStatus
from modelport.media.tasks.tables import media_tasks


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
