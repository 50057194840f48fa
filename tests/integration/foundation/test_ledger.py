"""The ledger invariant under concurrency, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import random

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.billing import ledger
from modelport.billing.settlement import Settlement, write_settlements
from modelport.settings import default_tiers


async def test_200_concurrent_topups_and_charges_keep_ledger_equal_to_balance(engine: AsyncEngine) -> None:
    team = await accounts.create_team(engine, "busy", tier=default_tiers()[0].name)
    rng = random.Random(7)
    ops = [("topup" if i % 2 == 0 else "charge", rng.randint(1, 5_000_000)) for i in range(200)]

    async def apply(kind: str, micros: int, i: int) -> None:
        if kind == "topup":
            await ledger.topup(engine, team.id, micros)
        else:
            # A charge with nothing held, through the one code path that charges.
            await write_settlements(engine, [Settlement(team.id, 0, micros, f"req_{i}")])

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
        held = await ledger.reserve(
            engine, team.id, want_micros=100_000, minimum_micros=100_000, ref=f"h{i}", owner="t", lease_until_ms=2**62
        )
        if held is None:
            return False
        await write_settlements(engine, [Settlement(team.id, 100_000, 60_000, f"h{i}")])
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
    assert (
        await ledger.reserve(
            engine, team.id, want_micros=51, minimum_micros=51, ref="x", owner="t", lease_until_ms=2**62
        )
        is None
    )
    held = await ledger.reserve(
        engine, team.id, want_micros=50, minimum_micros=50, ref="y", owner="t", lease_until_ms=2**62
    )
    after = await accounts.get_team(engine, team.id)
    assert held is not None and after.balance_micros == 0 and after.frozen_micros == 50
    assert await ledger.ledger_sum(engine, team.id) == 0
