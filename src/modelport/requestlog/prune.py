"""Taking rows out of the request log: the statements the retention pruner (`retention.logs`,
`retention.partitions`) runs in its own transactions, which choose the batches and pace them.

A deleted row leaves the hourly counters (`request_log_counts`, which `GET /v1/logs` reads its `total`
from) in the same transaction, the inverse of `store._bump_counts`, so the counts stay equal to the rows
left. The daily rollups (`usage_daily`) keep the rows' usage.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, bindparam, delete, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from modelport.requestlog.store import ALL_USERS, HOUR_MS
from modelport.requestlog.tables import request_log_counts, request_logs


async def delete_batch_in(conn: AsyncConnection, batch: Sequence[Any]) -> int:
    """Delete the rows of `batch` (each with `id` and `created_at_ms`, oldest first) and take them out of the
    hourly counters, in the caller's transaction; returns how many were deleted."""
    # The batch's time span too: on PostgreSQL's day partitions only the days it covers are searched.
    c = request_logs.c
    stmt = (
        delete(request_logs)
        .where(
            c.id.in_([r.id for r in batch]),
            c.created_at_ms >= batch[0].created_at_ms,
            c.created_at_ms <= batch[-1].created_at_ms,
        )
        .returning(request_logs.c.team_id, request_logs.c.svc_user_id, request_logs.c.created_at_ms)
    )
    gone = (await conn.execute(stmt)).all()
    await _uncount(conn, gone)
    return len(gone)


async def _uncount(conn: AsyncConnection, gone: Sequence[Any]) -> None:
    """Take deleted rows out of the hourly counters (the inverse of `requestlog.store._bump_counts`)."""
    counts: Counter[tuple[str, str, int]] = Counter()
    for team_id, svc_user_id, created_at_ms in gone:
        hour = created_at_ms // HOUR_MS
        counts[(team_id, ALL_USERS, hour)] += 1
        if svc_user_id:
            counts[(team_id, svc_user_id, hour)] += 1
    if not counts:
        return
    c = request_log_counts.c
    key = and_(c.team_id == bindparam("t"), c.svc_user_id == bindparam("u"), c.hour == bindparam("h"))
    params = [{"t": t, "u": u, "h": h, "d": n} for (t, u, h), n in sorted(counts.items())]
    await conn.execute(update(request_log_counts).where(key).values(n=c.n - bindparam("d")), params)
    await conn.execute(delete(request_log_counts).where(key, c.n <= 0), params)


async def empty_payloads_in(conn: AsyncConnection, batch: Sequence[Any]) -> None:
    """Empty `input`/`result` of the rows of `batch` (each with `id` and `created_at_ms`, oldest first), in
    the caller's transaction."""
    # The batch's ids and time span, not a subquery: the update then reads only the rows it changes, by key
    # (a subquery made it scan every old day).
    c = request_logs.c
    await conn.execute(
        update(request_logs)
        .where(
            c.id.in_([r.id for r in batch]),
            c.created_at_ms >= batch[0].created_at_ms,
            c.created_at_ms <= batch[-1].created_at_ms,
        )
        .values(input=None, result=None)
    )


async def drop_day_partition_in(
    conn: AsyncConnection, name: str, lo_ms: int, hi_ms: int, rows: int | None
) -> int | None:
    """PostgreSQL: drop the day partition `name` ([lo_ms, hi_ms), whole hours) with its hours' counts, in the
    caller's transaction (which sets its lock timeout); returns its rows, or None (rolled back, nothing done)
    if it no longer holds `rows` rows (None: any number)."""
    # The parent first, as writers take it: no new row can reach the partition from here on.
    await conn.exec_driver_sql("LOCK TABLE ONLY request_logs IN ACCESS EXCLUSIVE MODE")
    held = int(await conn.scalar(text(f"SELECT count(*) FROM {name}")) or 0)
    if rows is not None and held != rows:
        await conn.rollback()
        return None
    await conn.execute(
        text("DELETE FROM request_log_counts WHERE hour >= :lo AND hour < :hi"),
        {"lo": lo_ms // HOUR_MS, "hi": hi_ms // HOUR_MS},
    )
    await conn.exec_driver_sql(f"DROP TABLE {name}")
    return held
