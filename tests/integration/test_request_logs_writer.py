"""The request log writer against real databases: batching, draining, idempotency, outages, spilling.

Outages are real: the writer talks to PostgreSQL through a TCP relay that the test cuts and restores.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import event, func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport import metrics
from modelport.requestlog.record import LogRecord
from modelport.requestlog.store import insert_logs
from modelport.requestlog.tables import request_log_counts, request_logs
from modelport.requestlog.writer import RequestLogWriter
from modelport.storage import sqlite_direct
from modelport.storage.db import create_engine
from tests.support.databases import migrated_engine

T0 = 1_700_000_000_000


def make(i: int, *, team: str = "team_w", user: str | None = None, at: int | None = None) -> LogRecord:
    return LogRecord(
        id=f"req_{team}_{i:06d}",
        team_id=team,
        created_at_ms=T0 + i * 1000 if at is None else at,
        status="success",
        provider="openai",
        model_name="gpt-4o-mini",
        endpoint="chat.completions",
        prompt_tokens=10,
        completion_tokens=5,
        cached_tokens=0,
        cost_micros=123,
        svc_user_id=user,
    )


async def row_count(engine: AsyncEngine, team: str = "team_w") -> int:
    async with engine.connect() as conn:
        found = await conn.scalar(select(func.count()).select_from(request_logs).where(request_logs.c.team_id == team))
    return int(found or 0)


async def counted(engine: AsyncEngine, team: str = "team_w", user: str = "") -> int:
    async with engine.connect() as conn:
        found = await conn.scalar(
            select(func.coalesce(func.sum(request_log_counts.c.n), 0)).where(
                request_log_counts.c.team_id == team, request_log_counts.c.svc_user_id == user
            )
        )
    return int(found or 0)


async def wait_for_rows(engine: AsyncEngine, expected: int) -> None:
    """Poll until `expected` rows are there; callers bound the wait with asyncio.timeout."""
    while True:
        if await row_count(engine) >= expected:
            return
        await asyncio.sleep(0.05)


async def test_close_drains_ten_thousand_pending_rows_in_batches(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    statements = 0

    def on_execute(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        nonlocal statements
        if statement.startswith("INSERT INTO request_logs"):
            statements += 1

    event.listen(engine.sync_engine, "before_cursor_execute", on_execute)
    direct = sqlite_direct.for_engine(engine)
    if direct is not None:  # SQLite: each batch is one transaction on the direct connection, not the engine's
        transaction = direct.transaction

        async def counted_transaction(fn: Any) -> Any:
            nonlocal statements
            statements += 1
            return await transaction(fn)

        monkeypatch.setattr(direct, "transaction", counted_transaction)
    writer = RequestLogWriter(engine, max_batch=500, flush_interval=0.2)
    await writer.start()
    for i in range(10_000):
        writer.record(make(i, user="user_0001" if i % 4 == 0 else None))
    assert writer.pending == 10_000  # record() did not touch the database
    await writer.aclose()
    event.remove(engine.sync_engine, "before_cursor_execute", on_execute)

    assert await row_count(engine) == 10_000
    assert await counted(engine) == 10_000 and await counted(engine, user="user_0001") == 2_500
    assert writer.stats.written == 10_000 and writer.stats.dropped == 0 and writer.pending == 0
    # Batched: a few multi-row statements per 500-row batch at most, never one per row.
    assert 20 <= statements <= 100


async def test_rows_arrive_within_the_flush_interval_without_a_flush(engine: AsyncEngine) -> None:
    writer = RequestLogWriter(engine, flush_interval=0.1)
    await writer.start()
    try:
        started = time.monotonic()
        for i in range(3):
            writer.record(make(i))
        async with asyncio.timeout(5):
            await wait_for_rows(engine, 3)
        assert time.monotonic() - started < 2
    finally:
        await writer.aclose()


async def test_flush_waits_for_everything_recorded_before_it(engine: AsyncEngine) -> None:
    writer = RequestLogWriter(engine, flush_interval=60)  # only flush() or a full batch wakes it
    await writer.start()
    try:
        for i in range(1_234):
            writer.record(make(i))
        await writer.flush()
        assert await row_count(engine) == 1_234
    finally:
        await writer.aclose()


async def test_rows_queued_behind_a_full_batch_follow_it_at_once(engine: AsyncEngine) -> None:
    writer = RequestLogWriter(engine, max_batch=10, flush_interval=60)  # a full batch wakes it, not the timer
    await writer.start()
    try:
        for i in range(13):
            writer.record(make(i))
        async with asyncio.timeout(5):
            await wait_for_rows(engine, 13)  # the 3 behind the full batch did not wait 60 s
    finally:
        await writer.aclose()


async def test_without_short_batches_at_once_only_whole_batches_go_until_a_flush(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The instruction guard's setting (bench/_guard_launcher.py): as many writes every run.
    monkeypatch.setattr(RequestLogWriter, "default_short_batches_at_once", False)
    writer = RequestLogWriter(engine, max_batch=10, flush_interval=60)
    await writer.start()
    try:
        for i in range(13):
            writer.record(make(i))
        async with asyncio.timeout(5):
            await wait_for_rows(engine, 10)
        await asyncio.sleep(0.3)
        assert await row_count(engine) == 10 and writer.pending == 3
        await writer.flush()
        assert await row_count(engine) == 13
    finally:
        await writer.aclose()


async def test_reinserting_rows_neither_duplicates_nor_recounts(engine: AsyncEngine) -> None:
    first = [make(i, user="user_0001") for i in range(50)]
    assert await insert_logs(engine, first) == 50
    # A retried batch: half already written, half new.
    retry = first[25:] + [make(i, user="user_0001") for i in range(50, 75)]
    assert await insert_logs(engine, retry) == 25
    assert await row_count(engine) == 75
    assert await counted(engine) == 75 and await counted(engine, user="user_0001") == 75

    writer = RequestLogWriter(engine)
    for rec in first:
        writer.record(rec)
    await writer.aclose()
    assert writer.stats.duplicates == 50 and writer.stats.written == 0
    assert await row_count(engine) == 75 and await counted(engine) == 75


async def test_a_row_the_database_refuses_is_isolated_and_the_rest_land(engine: AsyncEngine) -> None:
    writer = RequestLogWriter(engine, max_batch=16)
    records = [make(i) for i in range(40)]
    records[17] = make(17, at=2**70)  # no 64-bit integer column can hold this
    for rec in records:
        writer.record(rec)
    await writer.aclose()
    assert await row_count(engine) == 39
    assert writer.stats.rejected == 1 and writer.stats.written == 39


# -- real outages (PostgreSQL through a relay) ------------------------------------------------------


class Relay:
    """A TCP relay to PostgreSQL that can drop every connection and refuse new ones, then come back."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def open(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()
        self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self._writers |= {client_writer, up_writer}

        async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.IncompleteReadError):
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            writer.close()

        await asyncio.gather(pipe(client_reader, up_writer), pipe(up_reader, client_writer))


@pytest.fixture
async def pg(tmp_path: Path) -> AsyncIterator[tuple[AsyncEngine, AsyncEngine, Relay]]:
    """(direct engine, engine through the relay, relay) on a fresh PostgreSQL database."""
    async with migrated_engine("postgres", tmp_path) as direct:
        url = direct.url
        relay = Relay(url.host or "127.0.0.1", url.port or 5432)
        await relay.open()
        relayed = create_engine(url.set(host="127.0.0.1", port=relay.port).render_as_string(hide_password=False))
        try:
            yield direct, relayed, relay
        finally:
            await relayed.dispose()
            with contextlib.suppress(AssertionError):
                await relay.cut()


async def test_an_outage_delays_rows_but_loses_none(pg: tuple[AsyncEngine, AsyncEngine, Relay]) -> None:
    direct, relayed, relay = pg
    writer = RequestLogWriter(relayed, flush_interval=0.05, retry_initial=0.05, retry_max=0.2)
    await writer.start()
    for i in range(100):
        writer.record(make(i))
    await writer.flush()
    await relay.cut()
    for i in range(100, 400):
        writer.record(make(i))
    await asyncio.sleep(0.5)
    assert writer.stats.failures > 0 and await row_count(direct) == 100
    await relay.open()
    async with asyncio.timeout(30):
        await writer.flush()
    await writer.aclose()
    assert await row_count(direct) == 400 and await counted(direct) == 400
    assert writer.stats.dropped == 0 and writer.stats.rejected == 0


async def test_outage_and_overflow_spill_to_disk_and_are_replayed(
    pg: tuple[AsyncEngine, AsyncEngine, Relay], tmp_path: Path
) -> None:
    direct, relayed, relay = pg
    spill_dir = tmp_path / "spill"
    writer = RequestLogWriter(
        relayed,
        max_batch=10,
        max_pending=50,
        spill_dir=spill_dir,
        flush_interval=0.05,
        retry_initial=0.05,
        retry_max=0.2,
    )
    await relay.cut()
    await writer.start()
    for i in range(200):
        writer.record(make(i))
    assert writer.pending == 50 and writer.stats.spilled == 150  # memory stays bounded
    assert list(spill_dir.glob("spill-*.jsonl"))
    # Once the writer sees the database gone, nothing stays in memory...
    async with asyncio.timeout(10):
        while True:
            if writer.pending == 0:
                break
            await asyncio.sleep(0.02)
    assert writer.stats.spilled == 200
    # ...new rows go straight to disk, and a flush returns once they are there.
    for i in range(200, 205):
        writer.record(make(i))
    async with asyncio.timeout(5):
        await writer.flush()
    assert writer.pending == 0 and writer.stats.spilled == 205
    await relay.open()
    async with asyncio.timeout(30):
        await wait_for_rows(direct, 205)
    await writer.aclose()
    assert await counted(direct) == 205 and writer.stats.dropped == 0
    assert list(spill_dir.glob("spill-*.jsonl")) == []


def rows_metric(name: str) -> float:
    """`modelport_write_spilled_rows_total` / `_dropped_rows_total` of the request log writer, in this process."""
    return REGISTRY.get_sample_value(f"modelport_write_{name}_rows_total", {"queue": "request log"}) or 0.0


@pytest.fixture
def metrics_on() -> Iterator[None]:
    metrics.enable(True)
    try:
        yield
    finally:
        metrics.enable(False)


async def test_rows_left_at_shutdown_are_spilled_and_replayed_by_the_next_writer(
    pg: tuple[AsyncEngine, AsyncEngine, Relay], tmp_path: Path, metrics_on: None
) -> None:
    direct, relayed, relay = pg
    spill_dir = tmp_path / "spill"
    await relay.cut()
    writer = RequestLogWriter(relayed, spill_dir=spill_dir, close_timeout=30, retry_initial=0.05)
    await writer.start()
    for i in range(120):
        writer.record(make(i))
    spilled_before = rows_metric("spilled")
    started = time.monotonic()
    await writer.aclose()
    # The outage is detected and the rows spilled: no waiting for close_timeout.
    assert time.monotonic() - started < 10
    assert writer.stats.spilled == 120 and writer.stats.dropped == 0
    assert rows_metric("spilled") - spilled_before == 120  # what the ModelportWritesSpilling rule watches
    assert await row_count(direct) == 0

    successor = RequestLogWriter(direct, spill_dir=spill_dir)
    await successor.start()
    async with asyncio.timeout(30):
        await wait_for_rows(direct, 120)
    await successor.aclose()
    assert await counted(direct) == 120
    assert list(spill_dir.glob("spill-*.jsonl")) == []


async def test_without_a_spill_dir_rows_left_at_shutdown_are_counted_as_dropped(
    pg: tuple[AsyncEngine, AsyncEngine, Relay], metrics_on: None
) -> None:
    _direct, relayed, relay = pg
    await relay.cut()
    writer = RequestLogWriter(relayed, close_timeout=0.5, retry_initial=0.05)
    for i in range(10):
        writer.record(make(i))
    dropped_before = rows_metric("dropped")
    await writer.aclose()
    assert writer.stats.dropped == 10 and writer.stats.spilled == 0 and writer.pending == 0
    assert rows_metric("dropped") - dropped_before == 10


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_nul_characters_never_cost_a_row(backend: str, tmp_path: Path) -> None:
    """PostgreSQL rejects NUL in text: a model id or error carrying one is written with U+FFFD instead."""
    async with migrated_engine(backend, tmp_path) as engine:
        bad = LogRecord(
            id="req_nul",
            team_id="team_w",
            created_at_ms=T0,
            status="error",
            provider="fake",
            model_name="ch\x00at",
            endpoint="chat.completions",
            error="no model 'fake/ch\x00at'",
        )
        assert await insert_logs(engine, [bad, make(1)]) == 2
        async with engine.connect() as conn:
            row = (await conn.execute(select(request_logs).where(request_logs.c.id == "req_nul"))).mappings().one()
        assert row["model_name"] == "ch\ufffdat" and row["error"] == "no model 'fake/ch\ufffdat'"
