"""Browsing a team's request log for the console: filters, keyset pages, one row, newer rows.

Unlike `GET /v1/logs` (exact totals, numbered pages), the console pages through the log with a cursor,
(created_at_ms, id) of the last row shown, so every page costs the same whatever its depth; each filter
has an index that starts with (team_id, <filter>, created_at_ms, id) (svc_user_id, model_name, status).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Row, select, tuple_
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.requestlog.record import RequestStatus
from modelport.requestlog.tables import request_logs

LogRow = Row[*tuple[Any, ...]]

c = request_logs.c

LIST_COLUMNS = (
    c.id,
    c.created_at_ms,
    c.status,
    c.error,
    c.provider,
    c.model_name,
    c.endpoint,
    c.prompt_tokens,
    c.completion_tokens,
    c.cached_tokens,
    c.cost_micros,
    c.svc_user_id,
    c.key_id,
    c.cache_write_tokens,
    c.cache_write_1h_tokens,
    c.price_tier,
    c.cache,
    c.served_model,
    c.previous_response_id,
    c.conversation_id,
)


@dataclass(frozen=True, slots=True)
class LogFilter:
    lo_ms: int  # created_at_ms >= lo_ms
    hi_ms: int  # created_at_ms < hi_ms
    provider: str | None = None
    model_name: str | None = None
    status: RequestStatus | None = None
    svc_user_id: str | None = None


def _where(team_id: str, f: LogFilter) -> list[ColumnElement[bool]]:
    conds = [c.team_id == team_id, c.created_at_ms >= f.lo_ms, c.created_at_ms < f.hi_ms]
    if f.model_name is not None:
        conds.append(c.model_name == f.model_name)
        if f.provider is not None:
            conds.append(c.provider == f.provider)
    if f.status is not None:
        conds.append(c.status == f.status)
    if f.svc_user_id is not None:
        conds.append(c.svc_user_id == f.svc_user_id)
    return conds


async def page(
    engine: AsyncEngine, team_id: str, f: LogFilter, *, before: tuple[int, str] | None, limit: int
) -> Sequence[LogRow]:
    """Up to `limit` rows, newest first, older than `before` (the last row of the previous page)."""
    conds = _where(team_id, f)
    if before is not None:
        conds.append(tuple_(c.created_at_ms, c.id) < tuple_(before[0], before[1]))
    stmt = select(*LIST_COLUMNS).where(*conds).order_by(c.created_at_ms.desc(), c.id.desc()).limit(limit)
    async with engine.connect() as conn:
        return (await conn.execute(stmt)).all()


async def newer(engine: AsyncEngine, team_id: str, after: tuple[int, str], *, limit: int) -> Sequence[LogRow]:
    """Rows logged after `after` (the newest row already shown), oldest first: the live tail."""
    stmt = (
        select(*LIST_COLUMNS)
        .where(c.team_id == team_id, tuple_(c.created_at_ms, c.id) > tuple_(after[0], after[1]))
        .order_by(c.created_at_ms, c.id)
        .limit(limit)
    )
    async with engine.connect() as conn:
        return (await conn.execute(stmt)).all()


async def newest(engine: AsyncEngine, team_id: str) -> tuple[int, str] | None:
    stmt = select(c.created_at_ms, c.id).where(c.team_id == team_id).order_by(c.created_at_ms.desc(), c.id.desc())
    async with engine.connect() as conn:
        row = (await conn.execute(stmt.limit(1))).first()
    return None if row is None else (int(row[0]), str(row[1]))


async def one(engine: AsyncEngine, team_id: str, request_id: str) -> LogRow | None:
    """One row with its retained payloads; None when it is not this team's (another team's is a 404 too)."""
    stmt = select(*LIST_COLUMNS, c.session_id, c.input, c.result).where(c.team_id == team_id, c.id == request_id)
    async with engine.connect() as conn:
        return (await conn.execute(stmt)).first()
