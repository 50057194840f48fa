"""PostgreSQL: the day partitions of `request_logs` (migration 0020): created ahead, dropped when expired.

`request_logs` is range-partitioned on `created_at_ms`, one partition per UTC day
(`request_logs_pYYYYMMDD`, [day start, next day start) in UNIX ms) and `request_logs_default` for rows no
day covers. Each pruning run:
- creates the partitions of today and the next `AHEAD_DAYS` days that are missing: `CREATE TABLE ... (LIKE
  request_logs)` then `ATTACH PARTITION` (SHARE UPDATE EXCLUSIVE on the parent: reads and writes go on),
  first moving into it any row of its day that sits in the default partition (the attach refuses otherwise);
- drops each day partition whose end is older than every team's window (the global window and every team's
  own; none while any team keeps its rows forever). With archiving on, its rows are written and verified
  first (as the batched path writes them: per team and batch, `archive.write_verified`). Then, in one short
  transaction with a lock timeout, it locks the parent (ACCESS EXCLUSIVE, only the parent), checks that the
  partition still holds exactly the rows archived (a late write aborts the drop; the next run archives
  again, the files' names depend only on their rows), removes the day's hours from `request_log_counts` (a
  day partition holds every row of those hours, so the counts `GET /v1/logs` reports stay equal to the rows
  left) and drops the table. The partial day at the window's edge, teams with shorter windows and the
  default partition are left to the batched deletes (`logs.prune_logs`). The drop's statements are
  `requestlog.prune.drop_day_partition_in`'s.
A lock that cannot be had within `LOCK_TIMEOUT` (a long read holds the parent) is tried again a few times,
then the partition is left for the next run.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, text, tuple_
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts.tables import teams
from modelport.media.files.storage import FileStore
from modelport.requestlog import prune
from modelport.requestlog.tables import request_logs
from modelport.retention.archive import ARCHIVE_COLUMNS, archive_key, write_verified

log = logging.getLogger("modelport.retention")
DAY_MS = 86_400_000
HOUR_MS = 3_600_000
AHEAD_DAYS = 7
DEFAULT_PARTITION = "request_logs_default"
LOCK_TIMEOUT = "2s"
LOCK_NOT_AVAILABLE = "55P03"  # the SQLSTATE of a lock_timeout
DROP_ATTEMPTS = 5
DROP_RETRY_PAUSE_SECONDS = 1.0
_PREFIX = "request_logs_p"
_BOUNDS = re.compile(r"FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)")
_PARTITIONS = text(
    "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
    "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass('request_logs')"
)
_IS_PARTITIONED = text("SELECT count(*) FROM pg_partitioned_table WHERE partrelid = to_regclass('request_logs')")


@dataclass(frozen=True, slots=True)
class Partition:
    name: str
    lo_ms: int
    hi_ms: int


@dataclass
class Dropped:
    partitions: int = 0
    rows: int = 0
    archive_files: int = 0


def partition_name(day: int) -> str:
    """`day`: days since the epoch (UTC)."""
    return _PREFIX + dt.datetime.fromtimestamp(day * 86_400, tz=dt.UTC).strftime("%Y%m%d")


async def is_partitioned(engine: AsyncEngine) -> bool:
    if engine.dialect.name != "postgresql":
        return False
    async with engine.connect() as conn:
        return bool(await conn.scalar(_IS_PARTITIONED))


async def day_partitions(conn: AsyncConnection) -> list[Partition]:
    """The range partitions, oldest first (the default partition is not one of them)."""
    found = []
    for name, bound in (await conn.execute(_PARTITIONS)).all():
        match = _BOUNDS.search(bound or "")
        if match is not None:
            found.append(Partition(name, int(match[1]), int(match[2])))
    return sorted(found, key=lambda p: p.lo_ms)


async def ensure_days(engine: AsyncEngine, first_day: int, last_day: int) -> int:
    """Create the missing partitions of days first_day..last_day (days since the epoch); returns how many."""
    async with engine.connect() as conn:
        have = {p.lo_ms for p in await day_partitions(conn)}
    created = 0
    for day in range(first_day, last_day + 1):
        if day * DAY_MS in have:
            continue
        try:
            await _create_day(engine, day)
            created += 1
        except DBAPIError as exc:  # a lock not had in time, a partition another process made
            log.warning("retention: creating partition %s failed, next run retries: %s", partition_name(day), exc)
    return created


async def _create_day(engine: AsyncEngine, day: int) -> None:
    name, lo, hi = partition_name(day), day * DAY_MS, (day + 1) * DAY_MS
    async with engine.begin() as conn:
        await conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        await conn.exec_driver_sql(f"CREATE TABLE {name} (LIKE request_logs INCLUDING DEFAULTS)")
        in_range = f"created_at_ms >= {lo} AND created_at_ms < {hi}"
        # Rows of this day written while it had no partition: moved, or ATTACH refuses (they would be in two).
        await conn.exec_driver_sql(
            f"WITH moved AS (DELETE FROM {DEFAULT_PARTITION} WHERE {in_range} RETURNING *) "
            f"INSERT INTO {name} SELECT * FROM moved"
        )
        await conn.exec_driver_sql(f"ALTER TABLE request_logs ATTACH PARTITION {name} FOR VALUES FROM ({lo}) TO ({hi})")


async def longest_window_days(engine: AsyncEngine, default_days: float) -> float | None:
    """The longest request-log window of any team (the global one included); None: some rows are kept
    forever (a window of 0), so no partition may be dropped whole."""
    async with engine.connect() as conn:
        overrides = list((await conn.execute(select(teams.c.log_days))).scalars())
    windows = [default_days] + [float(days) for days in overrides if days is not None]
    return None if min(windows) <= 0 else max(windows)


async def drop_expired(engine: AsyncEngine, before_ms: int, archive: FileStore | None, batch_rows: int) -> Dropped:
    """Drop every day partition that ends at or before `before_ms`, archiving its rows first if asked."""
    dropped = Dropped()
    async with engine.connect() as conn:
        # Whole hours only (every day partition is): the hourly counts of the hours it covers go with it.
        expired = [
            p
            for p in await day_partitions(conn)
            if p.hi_ms <= before_ms and p.lo_ms % HOUR_MS == 0 and p.hi_ms % HOUR_MS == 0
        ]
    for part in expired:
        files, archived = 0, None
        if archive is not None:
            files, archived = await _archive_partition(engine, archive, part, batch_rows)
        try:
            rows = await _drop_retrying(engine, part, archived)
        except DBAPIError as exc:
            log.warning("retention: dropping partition %s failed, next run retries: %s", part.name, exc)
            continue
        if rows is None:
            log.warning("retention: partition %s changed while it was archived; next run archives it again", part.name)
            continue
        dropped.partitions += 1
        dropped.rows += rows
        dropped.archive_files += files
    return dropped


async def _archive_partition(
    engine: AsyncEngine, store: FileStore, part: Partition, batch_rows: int
) -> tuple[int, int]:
    """Write the partition's rows, team by team in batches (keyset on (team_id, created_at_ms, id)); returns
    (files written, rows archived)."""
    c = request_logs.c
    order = (c.team_id, c.created_at_ms, c.id)
    files = rows = 0
    after: tuple[Any, ...] | None = None
    while True:
        stmt = select(*ARCHIVE_COLUMNS).where(c.created_at_ms >= part.lo_ms, c.created_at_ms < part.hi_ms)
        if after is not None:
            stmt = stmt.where(tuple_(*order) > tuple_(*after))
        async with engine.connect() as conn:
            batch = (await conn.execute(stmt.order_by(*order).limit(batch_rows))).all()
        if not batch:
            return files, rows
        for team_rows in _by_team(batch):
            await write_verified(store, archive_key(team_rows[0].team_id, team_rows), team_rows)
            files += 1
        rows += len(batch)
        last = batch[-1]
        after = (last.team_id, last.created_at_ms, last.id)


def _by_team(batch: Sequence[Any]) -> list[list[Any]]:
    groups: list[list[Any]] = []
    for row in batch:  # sorted by team first
        if groups and groups[-1][0].team_id == row.team_id:
            groups[-1].append(row)
        else:
            groups.append([row])
    return groups


async def _drop_retrying(engine: AsyncEngine, part: Partition, archived: int | None) -> int | None:
    """`_drop`, tried again after a lock timeout (a reader's transaction held the parent): up to
    DROP_ATTEMPTS times, a pause between, before leaving it to the next run."""
    for attempt in range(1, DROP_ATTEMPTS + 1):
        try:
            return await _drop(engine, part, archived)
        except DBAPIError as exc:
            if attempt == DROP_ATTEMPTS or getattr(exc.orig, "sqlstate", None) != LOCK_NOT_AVAILABLE:
                raise
            await asyncio.sleep(DROP_RETRY_PAUSE_SECONDS)
    raise AssertionError("unreachable")


async def _drop(engine: AsyncEngine, part: Partition, archived: int | None) -> int | None:
    """Drop the partition with its hours' counts; None (nothing done) if it no longer holds `archived` rows."""
    async with engine.begin() as conn:
        await conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        return await prune.drop_day_partition_in(conn, part.name, part.lo_ms, part.hi_ms, archived)
