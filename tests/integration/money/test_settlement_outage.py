"""Settlements survive a database that goes away mid-load: spilled to disk, replayed once, ledger exact.

The outages are real. PostgreSQL: the writer reaches it through a TCP relay that the test cuts (every
connection dropped, new ones refused) and restores. SQLite: the database's directory is moved away (new
connections cannot open the file) and moved back.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.billing import ledger
from modelport.billing.settlement import Settlement, SettlementWriter
from modelport.billing.tables import ledger_entries
from modelport.storage.db import create_engine
from modelport.storage.migrate import upgrade_to_head
from tests.integration.test_request_logs_writer import Relay
from tests.support.databases import postgres_database

TOPUP = 10_000_000
RESERVED = 1_000_000
HELD, COST = 1_000, 700  # per settlement: release 1000 from the reservation, charge 700


@dataclass
class Outage:
    """A database the writer reaches through `engine`, which `stop()` takes away and `restore()` brings back.
    `direct` is another engine for the test's own reads, used only while the database is up."""

    direct: AsyncEngine
    engine: AsyncEngine
    stop: Callable[[], Awaitable[None]]
    restore: Callable[[], Awaitable[None]]
    charges_while_down: Callable[[], int]


@contextlib.asynccontextmanager
async def sqlite_outage(tmp_path: Path) -> AsyncIterator[Outage]:
    home, away = tmp_path / "db", tmp_path / "db.away"
    url = f"sqlite+aiosqlite:///{home / 'modelport.db'}"
    direct, engine = create_engine(url), create_engine(url)
    await upgrade_to_head(direct)

    async def stop() -> None:
        home.rename(away)
        await engine.dispose()  # pooled connections closed: the next one must open the (missing) file

    async def restore() -> None:
        away.rename(home)

    def charges() -> int:
        with contextlib.closing(sqlite3.connect(away / "modelport.db")) as conn:
            return int(conn.execute("SELECT count(*) FROM ledger_entries WHERE kind = 'charge'").fetchone()[0])

    try:
        yield Outage(direct, engine, stop, restore, charges)
    finally:
        await engine.dispose()
        await direct.dispose()


@contextlib.asynccontextmanager
async def postgres_outage() -> AsyncIterator[Outage]:
    async with postgres_database() as url:
        direct = create_engine(url)
        await upgrade_to_head(direct)
        parsed = direct.url
        relay = Relay(parsed.host or "127.0.0.1", parsed.port or 5432)
        await relay.open()
        engine = create_engine(parsed.set(host="127.0.0.1", port=relay.port).render_as_string(hide_password=False))
        counted: list[int] = []

        async def stop() -> None:
            await relay.cut()
            counted.append(await charge_count(direct))  # the database itself is fine: only the writer is cut off

        async def restore() -> None:
            await relay.open()

        try:
            yield Outage(direct, engine, stop, restore, lambda: counted[-1])
        finally:
            await engine.dispose()
            with contextlib.suppress(AssertionError):
                await relay.cut()
            await direct.dispose()


@contextlib.asynccontextmanager
async def outage(backend: str, tmp_path: Path) -> AsyncIterator[Outage]:
    if backend == "sqlite":
        async with sqlite_outage(tmp_path) as found:
            yield found
    else:
        async with postgres_outage() as found:
            yield found


async def charge_count(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        found = await conn.scalar(
            select(func.count()).select_from(ledger_entries).where(ledger_entries.c.kind == "charge")
        )
    return int(found or 0)


async def funded_team(engine: AsyncEngine) -> str:
    team = await accounts.create_team(engine, "outage", tier="free")
    await ledger.topup(engine, team.id, TOPUP)
    assert (
        await ledger.reserve(
            engine,
            team.id,
            want_micros=RESERVED,
            minimum_micros=RESERVED,
            ref="rsv_1",
            owner="test",
            lease_until_ms=2**62,
        )
        == RESERVED
    )
    return team.id


def settlement(team_id: str, i: int) -> Settlement:
    return Settlement(team_id, HELD, COST, f"req_{i:04d}", release_ref="rsv_1")


async def assert_ledger_exact(engine: AsyncEngine, team_id: str, settled: int) -> None:
    team = await accounts.get_team(engine, team_id)
    assert team.balance_micros == TOPUP - RESERVED + settled * (HELD - COST)
    assert team.frozen_micros == RESERVED - settled * HELD
    assert await ledger.ledger_sum(engine, team_id) == team.balance_micros
    assert await charge_count(engine) == settled


async def wait_until(predicate: Callable[[], Awaitable[bool]]) -> None:
    """Poll `predicate` for up to 30 s."""
    async with asyncio.timeout(30):
        while True:
            if await predicate():
                return
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_settlements_spill_while_the_database_is_down_and_are_replayed_once(backend: str, tmp_path: Path) -> None:
    spill_dir = tmp_path / "spill"
    async with outage(backend, tmp_path) as db:
        team = await funded_team(db.direct)
        writer = SettlementWriter(
            db.engine, spill_dir=spill_dir, flush_interval=0.05, retry_initial=0.05, retry_max=0.2
        )
        await writer.start()
        for i in range(100):
            writer.submit(settlement(team, i))
        async with asyncio.timeout(30):
            await writer.flush()

        # Mid-load: the database goes away while requests keep settling.
        await db.stop()
        for i in range(100, 400):
            writer.submit(settlement(team, i))
            if i % 50 == 0:
                await asyncio.sleep(0.05)
        async with asyncio.timeout(30):
            await writer.flush()  # returns once everything is in the database or on disk
        assert writer.pending == 0 and writer.stats.spilled == 300 and writer.stats.failures > 0
        assert list(spill_dir.glob("spill-*.jsonl"))
        assert db.charges_while_down() == 100

        await db.restore()

        async def replayed() -> bool:
            return await charge_count(db.direct) == 400

        await wait_until(replayed)
        await writer.aclose()
        assert writer.stats.rejected == 0 and writer.stats.dropped == 0 and writer.stats.duplicates == 0
        assert list(spill_dir.glob("spill-*.jsonl")) == []
        await assert_ledger_exact(db.direct, team, 400)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_settlements_left_at_shutdown_are_replayed_by_the_next_process_and_never_twice(
    backend: str, tmp_path: Path
) -> None:
    spill_dir = tmp_path / "spill"
    async with outage(backend, tmp_path) as db:
        team = await funded_team(db.direct)
        await db.stop()
        writer = SettlementWriter(db.engine, spill_dir=spill_dir, close_timeout=30, retry_initial=0.05)
        await writer.start()
        for i in range(50):
            writer.submit(settlement(team, i))
        await writer.aclose()  # the database is away: the settlements go to disk, none is lost
        assert writer.stats.spilled == 50 and writer.stats.dropped == 0
        files = list(spill_dir.glob("spill-*.jsonl"))
        assert len(files) == 1
        copy = tmp_path / "copy.jsonl"
        shutil.copy(files[0], copy)
        await db.restore()

        # The next process replays the file at start-up...
        successor = SettlementWriter(db.direct, spill_dir=spill_dir)
        await successor.start()

        async def replayed() -> bool:
            return await charge_count(db.direct) == 50

        await wait_until(replayed)
        await successor.aclose()
        await assert_ledger_exact(db.direct, team, 50)

        # ...and a file replayed again (a crash between commit and delete) changes nothing.
        shutil.copy(copy, spill_dir / files[0].name)
        again = SettlementWriter(db.direct, spill_dir=spill_dir)
        await again.start()
        await again.aclose()
        assert again.stats.duplicates == 50 and again.stats.written == 0
        assert list(spill_dir.glob("spill-*.jsonl")) == []
        await assert_ledger_exact(db.direct, team, 50)
