"""The retention figures Prometheus and the operator console show: running totals kept in
`retention_stats` (shared by every process), the database's size, the age of the oldest log row."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.requestlog.tables import request_logs
from modelport.retention.tables import retention_stats

# Names in `retention_stats`: rows removed per table, payloads emptied, archive files, the last run.
PRUNED_PREFIX = "pruned:"
ARCHIVE_FILES = "archive_files"
LAST_RUN_AT_MS = "last_run_at_ms"
LAST_RUN_MS = "last_run_duration_ms"


@dataclass(frozen=True, slots=True)
class RetentionFigures:
    pruned: dict[str, int]  # table (or "request_logs.payloads") -> rows, since the database was created
    archive_files: int
    last_run_at_ms: int | None
    last_run_ms: int | None
    database_bytes: int | None
    oldest_log_ms: int | None


async def bump(conn: AsyncConnection, counts: Mapping[str, int]) -> None:
    """Add to the running totals (in the caller's transaction)."""
    rows = [{"name": name, "value": value} for name, value in sorted(counts.items()) if value]
    if not rows:
        return
    stmt = (postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert)(retention_stats)
    stmt = stmt.on_conflict_do_update(
        index_elements=["name"], set_={"value": retention_stats.c.value + stmt.excluded.value}
    )
    await conn.execute(stmt, rows)


async def set_values(engine: AsyncEngine, values: Mapping[str, int]) -> None:
    async with engine.begin() as conn:
        for name, value in values.items():
            updated = await conn.execute(
                retention_stats.update().where(retention_stats.c.name == name), {"value": value}
            )
            if not updated.rowcount:
                await conn.execute(retention_stats.insert(), {"name": name, "value": value})


async def database_bytes(engine: AsyncEngine) -> int | None:
    if engine.dialect.name == "postgresql":
        async with engine.connect() as conn:
            size = await conn.scalar(select(func.pg_database_size(func.current_database())))
        return None if size is None else int(size)
    path = make_url(str(engine.url)).database
    if not path or path == ":memory:":
        return None
    return _sqlite_bytes(path)


def _sqlite_bytes(path: str) -> int:
    # The WAL holds committed pages not yet checkpointed into the main file: both are the database.
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


async def oldest_log_ms(engine: AsyncEngine) -> int | None:
    async with engine.connect() as conn:  # the first entry of ix_request_logs_created_id
        value = await conn.scalar(select(func.min(request_logs.c.created_at_ms)))
    return None if value is None else int(value)


async def read_figures(engine: AsyncEngine) -> RetentionFigures:
    async with engine.connect() as conn:
        stored = {name: int(value) for name, value in (await conn.execute(select(retention_stats))).all()}
    return RetentionFigures(
        pruned={k.removeprefix(PRUNED_PREFIX): v for k, v in sorted(stored.items()) if k.startswith(PRUNED_PREFIX)},
        archive_files=stored.get(ARCHIVE_FILES, 0),
        last_run_at_ms=stored.get(LAST_RUN_AT_MS),
        last_run_ms=stored.get(LAST_RUN_MS),
        database_bytes=await database_bytes(engine),
        oldest_log_ms=await oldest_log_ms(engine),
    )
