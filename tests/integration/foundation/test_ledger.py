"""The ledger invariant under concurrency, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import random

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.billing import ledger
from modelport.settings import default_tiers


async def test_200_concurrent_topups_and_charges_keep_ledger_equal_to_balance(engine: AsyncEngine) -> None:
    team = await accounts.create_team(engine, "busy", tier=default_tiers()[0].name)
    rng = random.Random(7)
    ops = [("topup" if i % 2 == 0 else "charge", rng.randint(1, 5_000_000)) for i in range(200)]

    async def apply(kind: str, micros: int, i: int) -> None:
        if kind == "topup":
            await ledger.topup(engine, team.id, micros)
        else:
            await ledger.charge(engine, team.id, micros, ref=f"req_{i}")

    await asyncio.gather(*(apply(kind, micros, i) for i, (kind, micros) in enumerate(ops)))

    expected = sum(m if k == "topup" else -m for k, m in ops)
    fresh = await accounts.get_team(engine, team.id)
    assert fresh.balance_micros == expected
    assert await ledger.ledger_sum(engine, team.id) == fresh.balance_micros
    assert fresh.frozen_micros == 0


async def test_concurrent_holds_never_overdraw_and_settle_exactly(engine: AsyncEngine) -> None:
    team = await accounts.create_team(engine, "holder", tier="free")
    await ledger.topup(engine, team.id, 1_000_000)  # covers 10 holds of 0.1 USD

    async def attempt(i: int) -> bool:
        held = await ledger.hold(engine, team.id, 100_000, ref=f"h{i}")
        if held is None:
            return False
        await ledger.settle(engine, team.id, held_micros=100_000, cost_micros=60_000, ref=f"h{i}")
        return True

    results = await asyncio.gather(*(attempt(i) for i in range(60)))
    admitted = sum(results)
    fresh = await accounts.get_team(engine, team.id)
    assert admitted >= 10  # settled holds free money for later ones
    assert fresh.balance_micros == 1_000_000 - admitted * 60_000
    assert fresh.balance_micros >= 0
    assert fresh.frozen_micros == 0
    assert await ledger.ledger_sum(engine, team.id) == fresh.balance_micros


async def test_hold_refused_when_balance_short(engine: AsyncEngine) -> None:
    team = await accounts.create_team(engine, "poor", tier="free")
    await ledger.topup(engine, team.id, 50)
    assert await ledger.hold(engine, team.id, 51, ref="x") is None
    after = await ledger.hold(engine, team.id, 50, ref="y")
    assert after is not None and after.balance_micros == 0 and after.frozen_micros == 50
    assert await ledger.ledger_sum(engine, team.id) == 0
