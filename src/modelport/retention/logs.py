"""Pruning the request log: rows past their team's window, and payloads past theirs.

Rows go in batches, oldest first, each batch one short transaction that also takes the rows out of the
hourly counters `GET /v1/logs` reads its `total` from (`request_log_counts`), so the counts stay equal to
the rows left. The daily rollups (`usage_daily`) keep the rows' usage: charts and totals do not change.
This module chooses and paces the batches; the statements that change the log are `requestlog.prune`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts.tables import teams
from modelport.media.files.storage import FileStore
from modelport.requestlog import prune
from modelport.requestlog.tables import request_logs
from modelport.retention.archive import ARCHIVE_COLUMNS, archive_key, utc_day, write_verified
from modelport.retention.pacing import Pacing

DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class LogPruning:
    default_days: float  # 0: forever
    pacing: Pacing
    archive: FileStore | None  # archive before deleting


@dataclass
class LogPruned:
    rows: int = 0
    archive_files: int = 0


async def team_windows(engine: AsyncEngine, default_days: float) -> list[tuple[str, float]]:
    """(team id, window in days) of every team whose rows expire (a window of 0 keeps them forever)."""
    async with engine.connect() as conn:
        found = (await conn.execute(select(teams.c.id, teams.c.log_days))).all()
    windows = [(team_id, default_days if days is None else float(days)) for team_id, days in found]
    return [(team_id, days) for team_id, days in windows if days > 0]


async def count_expired(engine: AsyncEngine, default_days: float, now_ms: int) -> int:
    """How many rows are past their team's window (what `prune_logs` will remove, for the progress shown)."""
    total = 0
    for team_id, days in await team_windows(engine, default_days):
        c = request_logs.c
        stmt = select(func.count()).where(c.team_id == team_id, c.created_at_ms < now_ms - int(days * DAY_MS))
        async with engine.connect() as conn:
            total += int(await conn.scalar(stmt) or 0)
    return total


async def prune_logs(
    engine: AsyncEngine, plan: LogPruning, now_ms: int, *, on_rows: Callable[[int], None] | None = None
) -> LogPruned:
    """Remove the rows past their team's window; `on_rows` hears of every batch removed."""
    pruned = LogPruned()
    for team_id, days in await team_windows(engine, plan.default_days):
        cutoff = now_ms - int(days * DAY_MS)
        while True:
            started = time.monotonic()
            batch = await _oldest(engine, team_id, cutoff, plan)
            if not batch:
                break
            if plan.archive is not None:
                pruned.archive_files += await _archive(plan.archive, team_id, batch)
            deleted = await _delete(engine, batch)
            pruned.rows += deleted
            if on_rows is not None:
                on_rows(deleted)
            if len(batch) < plan.pacing.batch_rows:
                break
            await plan.pacing.pause_after(started)
    return pruned


async def _oldest(engine: AsyncEngine, team_id: str, cutoff: int, plan: LogPruning) -> Sequence[Any]:
    columns = ARCHIVE_COLUMNS if plan.archive is not None else (request_logs.c.id, request_logs.c.created_at_ms)
    stmt = (
        select(*columns)
        .where(request_logs.c.team_id == team_id, request_logs.c.created_at_ms < cutoff)
        .order_by(request_logs.c.created_at_ms, request_logs.c.id)
        .limit(plan.pacing.batch_rows)
    )
    async with engine.connect() as conn:
        return (await conn.execute(stmt)).all()


async def _archive(store: FileStore, team_id: str, batch: Sequence[Any]) -> int:
    """One verified file per UTC day of the batch; raises (and so deletes nothing) if one fails."""
    by_day: dict[str, list[Any]] = {}
    for row in batch:
        by_day.setdefault(utc_day(row.created_at_ms), []).append(row)
    for rows in by_day.values():
        await write_verified(store, archive_key(team_id, rows), rows)
    return len(by_day)


async def _delete(engine: AsyncEngine, batch: Sequence[Any]) -> int:
    async with engine.begin() as conn:
        return await prune.delete_batch_in(conn, batch)


async def prune_payloads(engine: AsyncEngine, days: float, pacing: Pacing, now_ms: int) -> int:
    """Empty `input`/`result` of rows older than `days`, through the partial index of rows that hold them,
    one UTC day at a time from the oldest such row."""
    if days <= 0:
        return 0
    cutoff = now_ms - int(days * DAY_MS)
    c = request_logs.c
    async with engine.connect() as conn:
        first = await conn.scalar(select(func.min(c.created_at_ms)).where(_HOLDING, c.created_at_ms < cutoff))
    total, lo = 0, first
    while lo is not None and lo < cutoff:
        # Day bounds: on PostgreSQL's day partitions each batch is planned over one partition, not over every
        # old day (planning ~90 partitions took longer than the batch's own work).
        hi = min(cutoff, (lo // DAY_MS + 1) * DAY_MS)
        total += await _empty_payloads(engine, lo, hi, pacing)
        lo = hi
    return total


_HOLDING = or_(request_logs.c.input.is_not(None), request_logs.c.result.is_not(None))


async def _empty_payloads(engine: AsyncEngine, lo: int, hi: int, pacing: Pacing) -> int:
    """Empty the payloads of rows created in [lo, hi), a batch at a time."""
    c = request_logs.c
    oldest = (
        select(c.id, c.created_at_ms)
        .where(_HOLDING, c.created_at_ms >= lo, c.created_at_ms < hi)
        .order_by(c.created_at_ms)
        .limit(pacing.batch_rows)
    )
    total = 0
    while True:
        started = time.monotonic()
        async with engine.begin() as conn:
            batch = (await conn.execute(oldest)).all()
            if batch:
                await prune.empty_payloads_in(conn, batch)
        total += len(batch)
        if batch:
            await pacing.pause_after(started)  # after a day's last batch too: the next day's follows
        if len(batch) < pacing.batch_rows:
            return total
