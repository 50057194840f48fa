"""PostgreSQL's day partitions of `request_logs` (issue 23 item 2, migration 0020), on a real server.

A database populated at 0019 is converted and keeps every row (same values, same count, same `GET /v1/logs`
totals); the pruner creates the coming days ahead, moves rows that waited in the default partition into
their day, keeps every partition while a team keeps its rows forever, then drops the days older than every
team's window (gone from `pg_inherits`), archiving exactly their rows first, deletes a shorter-window team's
rows in batches, and leaves the counts `GET /v1/logs` reports equal to the rows left.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alembic import command
from sqlalchemy import Connection, column, func, select, table, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.ids import new_id
from modelport.media.files.storage.local import LocalFileStore
from modelport.requestlog import store
from modelport.requestlog.params import LogQuery
from modelport.requestlog.query import find_logs
from modelport.requestlog.record import LogRecord
from modelport.requestlog.store import insert_logs
from modelport.requestlog.tables import request_log_counts, request_logs
from modelport.retention import partitions
from modelport.retention.pruner import Pruner
from modelport.settings import RetentionSettings
from modelport.storage.db import create_engine
from modelport.storage.migrate import alembic_config, upgrade_to_head
from tests.support.databases import postgres_database

DAY_MS = 86_400_000
DAYS = 12
PER_DAY = 30  # rows per team and day


def _upgrade_to(connection: Connection, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


@asynccontextmanager
async def engine_at_0019() -> AsyncIterator[AsyncEngine]:
    async with postgres_database() as url:
        engine = create_engine(url, pool_size=10)
        try:
            async with engine.begin() as conn:
                await conn.run_sync(_upgrade_to, "0019")
            yield engine
        finally:
            await engine.dispose()


def records(team_id: str, now_ms: int) -> list[LogRecord]:
    """PER_DAY rows on each of the last DAYS days, 40 minutes apart, half with payloads, two end users."""
    out = []
    for day in range(DAYS):
        for k in range(PER_DAY):
            at = now_ms - day * DAY_MS - k * 40 * 60_000 - 1
            payload = '{"q": 1}' if k % 2 else None
            out.append(
                LogRecord(
                    f"req_{team_id}_{day}_{k}",
                    team_id,
                    at,
                    "success" if k % 7 else "error",
                    "p",
                    "m",
                    "chat.completions",
                    cost_micros=k,
                    svc_user_id=f"u{k % 2}",
                    input=payload,
                    result=payload,
                )
            )
    return out


# Columns later migrations add (0023, 0026, 0027, 0028): rows written at 0019 have none of them.
LATER_COLUMNS = frozenset(
    {
        "cache_write_tokens",
        "cache_write_1h_tokens",
        "price_tier",
        "cache",
        "cache_saved_micros",
        "previous_response_id",
        "conversation_id",
        "served_model",
    }
)
COLUMNS_AT_0019 = [c for c in request_logs.c if c.name not in LATER_COLUMNS]


# Team columns later migrations add (0026): a team made at 0019 has none of them.
LATER_TEAM_COLUMNS = frozenset({"cache", "cache_tool_calls"})


@dataclass(frozen=True)
class TeamAt0019:
    id: str
    name: str


async def team_at_0019(engine: AsyncEngine, name: str) -> TeamAt0019:
    """A team as the schema of revision 0019 holds it (`accounts.create_team` writes and reads today's row)."""
    team_id = new_id("team")
    values = {"id": team_id, "name": name, "balance_micros": 0, "frozen_micros": 0, "tier": "free"}
    values |= {"asset_service": False, "log_retention": False, "created_at_ms": int(time.time() * 1000)}
    assert not LATER_TEAM_COLUMNS & values.keys()
    # The bare columns, not `teams`: its insert would add the Python-side defaults of the later columns.
    at_0019 = table("teams", *(column(name) for name in values))
    async with engine.begin() as conn:
        await conn.execute(at_0019.insert().values(**values))
    return TeamAt0019(team_id, name)


async def insert_at_0019(engine: AsyncEngine, recs: list[LogRecord]) -> int:
    """`insert_logs` as the schema of revision 0019 takes it: the row without later columns, and the
    hourly counters (what `GET /v1/logs` totals come from)."""
    rows = [{k: v for k, v in r.as_row().items() if k not in LATER_COLUMNS} for r in recs]
    async with engine.begin() as conn:
        stmt = postgresql.insert(request_logs).on_conflict_do_nothing().returning(request_logs.c.id)
        inserted = set((await conn.execute(stmt, rows)).scalars())
        counts = store._count_params([r for r in rows if r["id"] in inserted])
        if counts:
            await conn.execute(store._counts_upsert(postgresql.insert(request_log_counts)), counts)
    return len(inserted)


async def all_rows(engine: AsyncEngine) -> list[dict[str, Any]]:
    """Every row, every value of the columns the table had at 0019."""
    async with engine.connect() as conn:
        found = await conn.execute(select(*COLUMNS_AT_0019).order_by(request_logs.c.id))
        return [dict(r._mapping) for r in found]


async def partition_names(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as conn:
        found = await conn.execute(
            text(
                "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                "WHERE i.inhparent = 'request_logs'::regclass"
            )
        )
        return set(found.scalars())


async def logs_total(engine: AsyncEngine, team_id: str, now_ms: int, days: int = 30) -> int:
    """The `total` GET /v1/logs reports for the last `days` days (its window is at most 30)."""
    now = now_ms // 1000
    # A page past the end: the total alone, read the same way on every schema revision.
    query = LogQuery(start_time=now - days * 86_400, end_time=now + 3600, page=10**9)
    page = await find_logs(engine, team_id, query)
    return page.total


async def counted(engine: AsyncEngine, team_id: str) -> int:
    async with engine.connect() as conn:
        c = request_log_counts.c
        stmt = select(func.coalesce(func.sum(c.n), 0)).where(c.team_id == team_id, c.svc_user_id == "")
        return int(await conn.scalar(stmt) or 0)


async def rows_of(engine: AsyncEngine, team_id: str) -> set[str]:
    async with engine.connect() as conn:
        found = await conn.execute(select(request_logs.c.id).where(request_logs.c.team_id == team_id))
        return set(found.scalars())


async def test_migration_keeps_every_row_and_partitions_by_day() -> None:
    now_ms = int(time.time() * 1000)
    async with engine_at_0019() as engine:
        teams = [await team_at_0019(engine, f"t{i}") for i in range(2)]
        for team in teams:
            assert await insert_at_0019(engine, records(team.id, now_ms)) == DAYS * PER_DAY
        before = await all_rows(engine)
        totals = [await logs_total(engine, t.id, now_ms) for t in teams]
        assert len(before) == 2 * DAYS * PER_DAY and all(totals)

        await upgrade_to_head(engine)

        assert await all_rows(engine) == before  # every row, every value
        assert [await logs_total(engine, t.id, now_ms) for t in teams] == totals
        today = now_ms // DAY_MS
        days_with_rows = {r["created_at_ms"] // DAY_MS for r in before}
        expected = {partitions.partition_name(d) for d in days_with_rows | set(range(today, today + 8))}
        assert await partition_names(engine) == expected | {partitions.DEFAULT_PARTITION}
        async with engine.connect() as conn:
            key = await conn.scalar(
                text(
                    "SELECT pg_get_constraintdef(oid) FROM pg_constraint "
                    "WHERE conrelid = 'request_logs'::regclass AND contype = 'p'"
                )
            )
            assert key == "PRIMARY KEY (id, created_at_ms)"
            found = await conn.execute(text("SELECT indexname FROM pg_indexes WHERE tablename = 'request_logs'"))
            indexes = set(found.scalars())
            assert {i.name for i in request_logs.indexes} | {"pk_request_logs"} == indexes
        # The writer still skips a row it already wrote (a retried batch), and a row far ahead lands in the
        # default partition instead of failing.
        again = records(teams[0].id, now_ms)[:5]
        assert await insert_logs(engine, again) == 0
        later = LogRecord("req_later", teams[0].id, now_ms + 30 * DAY_MS, "success", "p", "m", "chat.completions")
        assert await insert_logs(engine, [later]) == 1
        async with engine.connect() as conn:
            in_default = await conn.scalar(text(f"SELECT count(*) FROM {partitions.DEFAULT_PARTITION}"))
        assert in_default == 1
        # Creating that day's partition moves the row out of the default partition, keeping it.
        later_day = (now_ms + 30 * DAY_MS) // DAY_MS
        assert await partitions.ensure_days(engine, later_day, later_day) == 1
        async with engine.connect() as conn:
            assert await conn.scalar(text(f"SELECT count(*) FROM {partitions.DEFAULT_PARTITION}")) == 0
            moved = await conn.scalar(text(f"SELECT count(*) FROM {partitions.partition_name(later_day)}"))
            assert moved == 1
        assert len(await all_rows(engine)) == len(before) + 1


async def test_pruner_drops_whole_expired_days_and_deletes_shorter_windows(tmp_path: Path) -> None:
    now_ms = int(time.time() * 1000)
    async with engine_at_0019() as engine:
        long, short, forever = [await team_at_0019(engine, name) for name in "lsf"]
        for team in (long, short, forever):
            await insert_at_0019(engine, records(team.id, now_ms))
        await upgrade_to_head(engine)
        async with engine.begin() as conn:  # the partitions of the next days are the pruner's to create
            for day in range(now_ms // DAY_MS + 1, now_ms // DAY_MS + 8):
                await conn.execute(text(f"DROP TABLE {partitions.partition_name(day)}"))
        await accounts.update_team(engine, short.id, log_days=3.0)
        await accounts.update_team(engine, forever.id, log_days=0.0)
        store = LocalFileStore(tmp_path / "files")
        settings = RetentionSettings(
            request_logs_days=5, log_payloads_days=4, archive=True, batch_rows=25, batch_pause_seconds=0
        )
        pruner = Pruner(engine, settings, lock_file=tmp_path / "pruner.lock", archive_store=store)
        old_parts = await partition_names(engine)

        # A team keeps its rows forever: no day may be dropped whole; the others' rows go in batches.
        report = await pruner.run_once()
        assert report is not None
        today = now_ms // DAY_MS
        ahead = {partitions.partition_name(d) for d in range(today, today + 8)}
        assert old_parts <= await partition_names(engine)  # nothing dropped
        assert ahead <= await partition_names(engine)  # created ahead
        assert len(await rows_of(engine, forever.id)) == DAYS * PER_DAY

        # Now every team's window is 5 days or shorter: days ending before now - 5 days are dropped.
        await accounts.update_team(engine, forever.id, log_days=None)
        report = await pruner.run_once()
        assert report is not None
        cutoff = now_ms - 5 * DAY_MS
        left_parts = await partition_names(engine)
        for day in range(today - DAYS, today + 8):
            name = partitions.partition_name(day)
            if (day + 1) * DAY_MS <= cutoff:
                assert name not in left_parts, name  # dropped whole
            elif day >= today - DAYS + 1:
                assert name in left_parts, name  # the partially expired day, and the newer ones

        expected_removed: set[str] = set()
        for team, days in ((long, 5), (short, 3), (forever, 5)):
            written = {r.id: r for r in records(team.id, now_ms)}
            keep = {i for i, r in written.items() if r.created_at_ms >= now_ms - days * DAY_MS}
            assert await rows_of(engine, team.id) == keep, team.name
            expected_removed |= set(written) - keep
            # GET /v1/logs: its total equals the rows left in its window, and the hourly counts the rows.
            assert await counted(engine, team.id) == len(keep)
            assert await logs_total(engine, team.id, now_ms) == len(keep)
        archived: list[str] = []
        for path in (tmp_path / "files" / "archive" / "request_logs").rglob("*.jsonl.gz"):
            archived.extend(json.loads(line)["id"] for line in gzip.decompress(path.read_bytes()).splitlines())
        assert sorted(archived) == sorted(expected_removed)  # each removed row archived once, nothing else
        async with engine.connect() as conn:  # payloads older than 4 days are emptied in what is left
            holding = await conn.scalar(
                select(func.count()).where(
                    request_logs.c.input.is_not(None), request_logs.c.created_at_ms < now_ms - 4 * DAY_MS
                )
            )
        assert holding == 0


async def test_a_drop_waits_out_a_reader_and_gives_up_on_one_that_stays() -> None:
    now_ms = int(time.time() * 1000)
    async with engine_at_0019() as engine:
        team = await team_at_0019(engine, "t")
        await insert_at_0019(engine, records(team.id, now_ms))
        await upgrade_to_head(engine)
        oldest_day = min(r.created_at_ms for r in records(team.id, now_ms)) // DAY_MS
        old = partitions.partition_name(oldest_day)

        async def hold_parent(seconds: float) -> None:
            # A reader's open transaction: its lock on request_logs is what a drop must wait for.
            async with engine.connect() as conn:
                await conn.execute(select(request_logs.c.id).limit(1))
                await asyncio.sleep(seconds)
                await conn.rollback()

        before = (oldest_day + 1) * DAY_MS  # only the oldest day has expired
        holder = asyncio.create_task(hold_parent(600))
        await asyncio.sleep(0.5)
        dropped = await partitions.drop_expired(engine, before, None, 100)
        assert dropped.partitions == 0 and old in await partition_names(engine)  # left for the next run
        holder.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await holder

        holder = asyncio.create_task(hold_parent(3))  # longer than one lock timeout, shorter than the retries
        await asyncio.sleep(0.5)
        dropped = await partitions.drop_expired(engine, before, None, 100)
        await holder
        assert dropped.partitions == 1 and old not in await partition_names(engine)
        assert dropped.rows == sum(1 for r in records(team.id, now_ms) if r.created_at_ms // DAY_MS == oldest_day)
        assert await counted(engine, team.id) == len(await rows_of(engine, team.id))
