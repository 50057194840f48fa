"""A key's spend limit held through credit reservations (billing.credit with a KeyHold), on SQLite and
PostgreSQL: concurrent admissions never hold more than the key may spend, settlements charge its period,
and a dead process's key reservation is swept back to the key as well as to the team."""

from __future__ import annotations

import asyncio
import time

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.billing import ledger
from modelport.billing.credit import CreditBook
from modelport.billing.key_budget import KeyBudgetShort, KeyHold
from modelport.billing.settlement import SettlementWriter
from modelport.billing.tables import key_spend
from modelport.settings import CreditSettings

PERIOD = 1_700_000_000_000


async def _key(engine: AsyncEngine, name: str, team_micros: int) -> tuple[str, str]:
    team = await accounts.create_team(engine, name, tier="free")
    await ledger.topup(engine, team.id, team_micros)
    created = await accounts.create_key(engine, team.id, fields={"spend_limit_usd": "0.001"})
    return team.id, created.record.id


async def _spend(engine: AsyncEngine, key_id: str) -> tuple[int, int]:
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                select(key_spend.c.spent_micros, key_spend.c.frozen_micros).where(
                    key_spend.c.key_id == key_id, key_spend.c.period_start_ms == PERIOD
                )
            )
        ).one()
    return int(row[0]), int(row[1])


async def test_concurrent_admissions_never_hold_more_than_the_key_may_spend(engine: AsyncEngine) -> None:
    team, key_id = await _key(engine, "kb-many", 1_000_000)
    hold = KeyHold(key_id, PERIOD, 1_000)
    writer = SettlementWriter(engine, flush_interval=0.01)
    await writer.start()
    book = CreditBook(engine, writer)

    async def one() -> bool:
        try:
            allocation = await book.admit(team, 30, hold)
        except KeyBudgetShort:
            return False
        assert allocation is not None
        book.settle(allocation, 30, f"req-{id(allocation)}")
        return True

    results = await asyncio.gather(*(one() for _ in range(100)))
    await book.aclose()
    await writer.aclose()
    assert sum(results) == 1_000 // 30  # 33: what the limit covers, never more
    assert await _spend(engine, key_id) == (33 * 30, 0)
    fresh = await accounts.get_team(engine, team)
    assert (fresh.balance_micros, fresh.frozen_micros) == (1_000_000 - 33 * 30, 0)


async def test_a_dead_process_key_reservation_is_swept_back_to_the_key(engine: AsyncEngine) -> None:
    team, key_id = await _key(engine, "kb-dead", 1_000_000)
    hold = KeyHold(key_id, PERIOD, 10_000)
    writer = SettlementWriter(engine, flush_interval=0.01)
    await writer.start()
    fast = CreditSettings(lease_seconds=0.5, sweep_interval_seconds=0.2)
    dead = CreditBook(engine, writer, fast)
    first = await dead.admit(team, 100, hold)
    assert first is not None
    dead.settle(first, 70, "req-1")
    await writer.flush()  # the process "dies" now, holding the rest of its reservation
    spent, frozen = await _spend(engine, key_id)
    assert spent == 70 and frozen > 0
    alive = CreditBook(engine, writer, fast)
    await alive.start()
    deadline = time.monotonic() + 5
    while (await _spend(engine, key_id))[1]:
        assert time.monotonic() < deadline, "the key's part of the dead reservation never came back"
        await asyncio.sleep(0.05)
    assert await _spend(engine, key_id) == (70, 0)
    assert (await accounts.get_team(engine, team)).frozen_micros == 0
    with pytest.raises(KeyBudgetShort):  # 9,930 left: a request estimated above it is the key's refusal
        await alive.admit(team, 9_931, hold)
    assert await alive.admit(team, 9_930, hold) is not None
    await alive.aclose()
    await writer.aclose()
