"""`modelport admin logs export`: a team's log rows in a window as JSON lines, oldest first, the same lines
as the archive files. Read 1,000 rows at a time by keyset on (created_at_ms, id) through the team's index,
so a window of any size streams in constant memory."""

from __future__ import annotations

from collections.abc import AsyncIterator

from sqlalchemy import and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.requestlog.tables import request_logs
from modelport.retention.archive import ARCHIVE_COLUMNS, jsonl_line

EXPORT_PAGE = 1000


async def count_lines(engine: AsyncEngine, team_id: str, since_ms: int, until_ms: int) -> int:
    """How many lines `export_lines` will yield (for the progress shown on a terminal)."""
    c = request_logs.c
    stmt = select(func.count()).where(c.team_id == team_id, c.created_at_ms >= since_ms, c.created_at_ms < until_ms)
    async with engine.connect() as conn:
        return int(await conn.scalar(stmt) or 0)


async def export_lines(engine: AsyncEngine, team_id: str, since_ms: int, until_ms: int) -> AsyncIterator[bytes]:
    c = request_logs.c
    after: tuple[int, str] | None = None
    while True:
        where = [c.team_id == team_id, c.created_at_ms >= since_ms, c.created_at_ms < until_ms]
        if after is not None:
            where.append(or_(c.created_at_ms > after[0], and_(c.created_at_ms == after[0], c.id > after[1])))
        stmt = select(*ARCHIVE_COLUMNS).where(*where).order_by(c.created_at_ms, c.id).limit(EXPORT_PAGE)
        async with engine.connect() as conn:
            rows = (await conn.execute(stmt)).all()
        for row in rows:
            yield jsonl_line(row)
        if len(rows) < EXPORT_PAGE:
            return
        after = (rows[-1].created_at_ms, rows[-1].id)
