"""Teams, keys and tiers against a real database."""

from __future__ import annotations

from decimal import Decimal

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.accounts.auth import Authenticator
from modelport.accounts.tables import teams
from modelport.billing import ledger
from modelport.billing.topups import topup_team
from modelport.errors import Conflict, InvalidParameters, NotFound
from modelport.money import MAX_BALANCE_MICROS, MAX_TOPUP_USD, usd_to_micros
from modelport.settings import default_tiers


async def test_team_names_are_unique_and_validated(engine: AsyncEngine) -> None:
    await accounts.create_team(engine, "alpha", tier="free")
    with pytest.raises(Conflict):
        await accounts.create_team(engine, "alpha", tier="free")
    with pytest.raises(InvalidParameters):
        await accounts.create_team(engine, "bad name!", tier="free")
    with pytest.raises(NotFound):
        await accounts.get_team(engine, "nobody")


async def test_key_lifecycle_and_lookup_by_name_or_id(engine: AsyncEngine) -> None:
    team = await accounts.create_team(engine, "beta", tier="free")
    created = await accounts.create_key(engine, "beta", name="ci")
    assert created.key.startswith("mp-") and len(created.key) > 40
    assert created.record.prefix == created.key[:10]
    found = await accounts.lookup_key(engine, created.key)
    assert found is not None and found[1].id == team.id
    assert await accounts.lookup_key(engine, created.key + "x") is None

    auth = Authenticator(engine, ttl=0)
    context = await auth.authenticate(created.key)
    assert context is not None and context.team_name == "beta"
    await accounts.revoke_key(engine, created.record.id)
    assert await auth.authenticate(created.key) is None
    keys = await accounts.list_keys(engine, team.id)
    assert [k.active for k in keys] == [False]


async def test_single_topup_reaching_qualifying_amount_raises_tier(engine: AsyncEngine) -> None:
    tiers = default_tiers()
    team = await accounts.create_team(engine, "gamma", tier=tiers[0].name)
    small = await topup_team(engine, tiers, team.id, Decimal("9.99"))
    assert small.team.tier == "free" and not small.tier_changed
    # Two small top-ups adding up to more do not qualify: a single one must.
    again = await topup_team(engine, tiers, team.id, Decimal("9.99"))
    assert again.team.tier == "free"
    big = await topup_team(engine, tiers, team.id, Decimal("100"))
    assert big.team.tier == "tier2" and big.tier_changed
    # A later smaller top-up never lowers the tier.
    later = await topup_team(engine, tiers, team.id, Decimal("10"))
    assert later.team.tier == "tier2"
    assert later.team.balance_micros == 129_980_000


async def test_topup_rejects_sub_micro_and_negative_amounts(engine: AsyncEngine) -> None:
    team = await accounts.create_team(engine, "delta", tier="free")
    with pytest.raises(InvalidParameters):
        await topup_team(engine, default_tiers(), team.id, Decimal("0.0000001"))
    with pytest.raises(InvalidParameters):
        await topup_team(engine, default_tiers(), team.id, Decimal("-1"))


@pytest.mark.parametrize("amount", ["9300000000000", "1e13", "99999999999999999999", "1000000000.000001"])
async def test_topup_beyond_the_bound_is_refused(engine: AsyncEngine, amount: str) -> None:
    # 9.2e12 USD is 2**63 micro-USD: amounts near it gave a 500 (PostgreSQL) or a float balance (SQLite).
    team = await accounts.create_team(engine, "epsilon", tier="free")
    with pytest.raises(InvalidParameters) as caught:
        await topup_team(engine, default_tiers(), team.id, Decimal(amount))
    assert caught.value.param == "amount_usd"
    fresh = await accounts.get_team(engine, team.id)
    assert fresh.balance_micros == 0 and type(fresh.balance_micros) is int


async def test_topups_never_push_the_balance_past_the_bound(engine: AsyncEngine) -> None:
    team = await accounts.create_team(engine, "zeta", tier="free")
    biggest = Decimal(MAX_TOPUP_USD)
    # Up to the balance bound every top-up is taken; the one that would pass it is refused, nothing written.
    room = MAX_BALANCE_MICROS // usd_to_micros(biggest)
    async with engine.begin() as conn:  # start just below the bound without a thousand top-ups
        await conn.execute(
            update(teams)
            .where(teams.c.id == team.id)
            .values(balance_micros=MAX_BALANCE_MICROS - usd_to_micros(biggest))
        )
    assert room > 1
    await topup_team(engine, default_tiers(), team.id, biggest)
    with pytest.raises(InvalidParameters):
        await topup_team(engine, default_tiers(), team.id, Decimal("0.000001"))
    fresh = await accounts.get_team(engine, team.id)
    assert fresh.balance_micros == MAX_BALANCE_MICROS and type(fresh.balance_micros) is int
    entries = await ledger.ledger_sum(engine, team.id)
    assert entries == usd_to_micros(biggest)  # the refused top-up wrote no entry
