"""Credit reservations (billing.credit) and stale-hold recovery, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.billing import ledger
from modelport.billing.credit import CreditBook
from modelport.billing.settlement import SettlementWriter, release_stale_holds
from modelport.storage.tables import ledger_entries


async def _team(engine: AsyncEngine, name: str, micros: int) -> str:
    team = await accounts.create_team(engine, name, tier="free")
    if micros:
        await ledger.topup(engine, team.id, micros)
    return team.id


async def test_concurrent_admissions_never_exceed_the_balance(engine: AsyncEngine) -> None:
    team = await _team(engine, "credit-a", 1_000)
    writer = SettlementWriter(engine)
    book = CreditBook(engine, writer)
    results = await asyncio.gather(*(book.admit(team, 30) for _ in range(100)))
    admitted = [a for a in results if a is not None]
    assert len(admitted) == 1_000 // 30  # exactly what the balance covers, however the reservations fell
    fresh = await accounts.get_team(engine, team)
    assert fresh.balance_micros + fresh.frozen_micros == 1_000
    assert fresh.frozen_micros >= 30 * len(admitted)
    for allocation in admitted:
        book.settle(allocation, 20, "req")
    await book.close()
    await writer.close()
    fresh = await accounts.get_team(engine, team)
    assert fresh.frozen_micros == 0
    assert fresh.balance_micros == 1_000 - 20 * len(admitted)
    assert await ledger.ledger_sum(engine, team) == fresh.balance_micros


async def test_cost_above_estimate_is_charged_from_the_balance(engine: AsyncEngine) -> None:
    team = await _team(engine, "credit-b", 500)
    writer = SettlementWriter(engine)
    book = CreditBook(engine, writer)
    allocation = await book.admit(team, 100)
    assert allocation is not None
    book.settle(allocation, 180, "req-over")
    await book.close()
    await writer.close()
    fresh = await accounts.get_team(engine, team)
    assert (fresh.balance_micros, fresh.frozen_micros) == (320, 0)
    assert await ledger.ledger_sum(engine, team) == 320


async def test_idle_reservation_goes_back(engine: AsyncEngine) -> None:
    team = await _team(engine, "credit-c", 10_000)
    writer = SettlementWriter(engine, flush_interval=0.01)
    await writer.start()
    book = CreditBook(engine, writer, idle_return_seconds=0.1)
    await book.start()
    allocation = await book.admit(team, 50)
    assert allocation is not None
    assert (await accounts.get_team(engine, team)).frozen_micros > 0
    book.settle(allocation, 50, "req-idle")
    for _ in range(100):
        if (await accounts.get_team(engine, team)).frozen_micros == 0:
            break
        await asyncio.sleep(0.05)
    fresh = await accounts.get_team(engine, team)
    assert (fresh.balance_micros, fresh.frozen_micros) == (9_950, 0)
    await book.close()
    await writer.close()


async def test_stale_reservation_releases_only_what_is_outstanding(engine: AsyncEngine) -> None:
    team = await _team(engine, "credit-d", 10_000)
    writer = SettlementWriter(engine)
    book = CreditBook(engine, writer)
    first = await book.admit(team, 100)
    second = await book.admit(team, 100)
    assert first is not None and second is not None
    book.settle(first, 70, "req-1")
    await writer.flush()  # the first request's settlement landed; then the process "dies"
    async with engine.begin() as conn:  # age the reservation past the stale bound
        await conn.execute(update(ledger_entries).where(ledger_entries.c.kind == "hold").values(created_at_ms=0))
    assert await release_stale_holds(engine, stale_after_ms=1000) == 1
    fresh = await accounts.get_team(engine, team)
    assert (fresh.balance_micros, fresh.frozen_micros) == (10_000 - 70, 0)
    assert await ledger.ledger_sum(engine, team) == fresh.balance_micros
    assert await release_stale_holds(engine, stale_after_ms=1000) == 0  # nothing released twice
