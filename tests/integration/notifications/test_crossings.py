"""The crossing logic of `billing.notify` against real databases (SQLite and PostgreSQL): what a settlement, a
top-up, a 402 and the expiry check enqueue, and that concurrent transactions enqueue each event once."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import notifications
from modelport.accounts import service as accounts
from modelport.accounts.limits import period_start_ms
from modelport.accounts.tables import api_keys
from modelport.billing import notify
from modelport.billing.ledger import topup
from modelport.billing.settlement import Settlement, write_settlements
from modelport.billing.tables import key_spend
from modelport.clock import now_ms
from modelport.errors import RequestLimited
from modelport.webhooks.tables import webhook_deliveries
from tests.support.databases import BACKENDS, migrated_engine

URL = "https://hooks.example.com/modelport"


@pytest.fixture(params=BACKENDS)
async def engine(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    async with migrated_engine(request.param, tmp_path) as eng:
        yield eng


async def _team(engine: AsyncEngine, micros: int, **settings: Any) -> str:
    team = await accounts.create_team(engine, "t-" + secrets.token_hex(4), tier="free")
    if micros:
        await topup(engine, team.id, micros)
    if settings:
        await notifications.store(engine, team.id, notifications.NotificationSettings(**settings), None)
    return team.id


async def _events(engine: AsyncEngine, team_id: str) -> list[dict[str, Any]]:
    d = webhook_deliveries.c
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                select(d.payload, d.source, d.url, d.task_id).where(d.team_id == team_id).order_by(d.created_at_ms)
            )
        ).all()
    for row in rows:
        assert row.source == "notification" and row.url == URL and row.task_id is None
    return [json.loads(row.payload) for row in rows]


def _charge(team_id: str, cost: int, *, key: tuple[str, int] | None = None) -> Settlement:
    return Settlement(
        team_id=team_id,
        held_micros=0,
        cost_micros=cost,
        ref="req_" + secrets.token_hex(6),
        key_id=None if key is None else key[0],
        key_period_ms=0 if key is None else key[1],
    )


async def test_balance_low_once_per_crossing_and_armed_again_by_a_top_up(engine: AsyncEngine) -> None:
    team = await _team(engine, 10_000_000, url=URL, balance_below_micros=5_000_000)
    await write_settlements(engine, [_charge(team, 4_000_000)])  # 6 USD left: above
    assert await _events(engine, team) == []
    await write_settlements(engine, [_charge(team, 2_000_000)])  # 4 USD: crossed
    await write_settlements(engine, [_charge(team, 1_000_000)])  # 3 USD: still below, nothing new
    (low,) = await _events(engine, team)
    assert low["type"] == "balance.low"
    assert low["data"] == {
        "team_id": team,
        "balance_usd": "4.0000",
        "available_usd": "4.0000",
        "frozen_usd": "0.0000",
        "threshold_usd": "5.0000",
    }
    await topup(engine, team, 1_000_000)  # 4 USD: still below the threshold, stays sent
    await write_settlements(engine, [_charge(team, 100)])
    assert len(await _events(engine, team)) == 1
    await topup(engine, team, 5_000_000)  # 9 USD: armed again
    await write_settlements(engine, [_charge(team, 3_000_000)])  # 6 USD
    assert len(await _events(engine, team)) == 1
    await write_settlements(engine, [_charge(team, 2_000_000)])  # 4 USD: the second crossing
    assert [e["type"] for e in await _events(engine, team)] == ["balance.low", "balance.low"]


async def test_teams_without_settings_or_url_get_nothing(engine: AsyncEngine) -> None:
    plain = await _team(engine, 1_000_000)
    no_url = await _team(engine, 1_000_000, balance_below_micros=900_000)
    await write_settlements(engine, [_charge(plain, 500_000), _charge(no_url, 500_000)])
    await notify.balance_exhausted(engine, plain)
    await notify.balance_exhausted(engine, no_url)
    assert await _events(engine, plain) == [] and await _events(engine, no_url) == []


async def test_a_changed_threshold_arms_balance_low_again(engine: AsyncEngine) -> None:
    team = await _team(engine, 10_000_000, url=URL, balance_below_micros=5_000_000)
    await write_settlements(engine, [_charge(team, 6_000_000)])
    assert len(await _events(engine, team)) == 1
    same = notifications.NotificationSettings(url=URL, balance_below_micros=5_000_000)
    await notifications.store(engine, team, same, None)  # unchanged threshold: stays sent
    await write_settlements(engine, [_charge(team, 100)])
    assert len(await _events(engine, team)) == 1
    lower = notifications.NotificationSettings(url=URL, balance_below_micros=4_500_000)
    await notifications.store(engine, team, lower, None)
    await write_settlements(engine, [_charge(team, 100)])
    assert [e["data"]["threshold_usd"] for e in await _events(engine, team)] == ["5.0000", "4.5000"]


async def test_concurrent_settlements_send_balance_low_once(engine: AsyncEngine) -> None:
    team = await _team(engine, 10_000_000, url=URL, balance_below_micros=5_000_000)
    # Twenty transactions at once, each of which leaves the balance below the threshold after the sixth.
    await asyncio.gather(*(write_settlements(engine, [_charge(team, 500_000)]) for _ in range(20)))
    assert [e["type"] for e in await _events(engine, team)] == ["balance.low"]


async def test_balance_exhausted_once_until_a_top_up(engine: AsyncEngine) -> None:
    team = await _team(engine, 0, url=URL)
    await asyncio.gather(*(notify.balance_exhausted(engine, team) for _ in range(10)))
    (first,) = await _events(engine, team)
    assert first["type"] == "balance.exhausted" and first["data"]["available_usd"] == "0.0000"
    await notify.balance_exhausted(engine, team)
    assert len(await _events(engine, team)) == 1
    await topup(engine, team, 1)
    await notify.balance_exhausted(engine, team)
    assert [e["type"] for e in await _events(engine, team)] == ["balance.exhausted", "balance.exhausted"]


async def _limited_key(engine: AsyncEngine, team: str, limit_usd: str, period: str = "month") -> tuple[str, int]:
    created = await accounts.create_key(
        engine, team, fields={"spend_limit_usd": limit_usd, "spend_limit_period": period}
    )
    period_ms = period_start_ms(period, now_ms())
    async with engine.begin() as conn:
        await conn.execute(
            key_spend.insert().values(
                key_id=created.record.id, period_start_ms=period_ms, spent_micros=0, frozen_micros=0
            )
        )
    return created.record.id, period_ms


async def test_key_spend_thresholds_once_per_percent_and_period(engine: AsyncEngine) -> None:
    team = await _team(engine, 100_000_000, url=URL, key_spend_percent=(50, 80, 100))
    key = await _limited_key(engine, team, "10")
    await write_settlements(engine, [_charge(team, 4_000_000, key=key)])  # 40 %
    assert await _events(engine, team) == []
    await write_settlements(engine, [_charge(team, 4_500_000, key=key)])  # 85 %: 50 and 80 at once
    spent = await _events(engine, team)
    assert [(e["type"], e["data"]["percent"]) for e in spent] == [
        ("key.spend_threshold", 50),
        ("key.spend_threshold", 80),
    ]
    assert spent[0]["data"]["key_id"] == key[0] and spent[0]["data"]["limit_usd"] == "10.0000"
    assert spent[0]["data"]["spent_usd"] == "8.5000" and spent[0]["data"]["period"] == "month"
    await write_settlements(engine, [_charge(team, 100_000, key=key)])  # 86 %: nothing new
    assert len(await _events(engine, team)) == 2
    await write_settlements(engine, [_charge(team, 1_400_000, key=key)])  # 100 %
    assert [e["data"]["percent"] for e in await _events(engine, team)] == [50, 80, 100]
    # Another period (a new row of key_spend) crosses again.
    async with engine.begin() as conn:
        await conn.execute(key_spend.insert().values(key_id=key[0], period_start_ms=1, spent_micros=0, frozen_micros=0))
    await write_settlements(engine, [_charge(team, 6_000_000, key=(key[0], 1))])
    assert [e["data"]["percent"] for e in await _events(engine, team)] == [50, 80, 100, 50]


async def test_concurrent_key_settlements_send_each_percent_once(engine: AsyncEngine) -> None:
    team = await _team(engine, 100_000_000, url=URL, key_spend_percent=(50, 100))
    key = await _limited_key(engine, team, "1")
    await asyncio.gather(*(write_settlements(engine, [_charge(team, 100_000, key=key)]) for _ in range(12)))
    assert sorted(e["data"]["percent"] for e in await _events(engine, team)) == [50, 100]


async def test_key_expiring_once_per_key_and_expiry(engine: AsyncEngine) -> None:
    team = await _team(engine, 1_000_000, url=URL, key_expiry_days=2)
    soon = int(time.time()) + 3600
    inside = await accounts.create_key(engine, team, fields={"expires_at": soon})
    await accounts.create_key(engine, team, fields={"expires_at": int(time.time()) + 3 * 86400})  # outside
    revoked = await accounts.create_key(engine, team, fields={"expires_at": soon})
    await accounts.revoke_key(engine, revoked.record.id)
    counts = await asyncio.gather(*(notify.expiring_keys(engine) for _ in range(5)))
    assert sum(counts) == 1
    (event,) = await _events(engine, team)
    assert event["type"] == "key.expiring"
    assert event["data"]["key_id"] == inside.record.id and event["data"]["expires_at"] == soon
    assert await notify.expiring_keys(engine) == 0
    # A new expiry date is a new event.
    async with engine.begin() as conn:
        await conn.execute(
            update(api_keys).where(api_keys.c.id == inside.record.id).values(expires_at_ms=(soon + 60) * 1000)
        )
    assert await notify.expiring_keys(engine) == 1


async def test_test_event_needs_a_url(engine: AsyncEngine) -> None:
    team = await _team(engine, 0)
    with pytest.raises(Exception, match="url"):
        await notify.send_test(engine, team)
    await notifications.store(engine, team, notifications.NotificationSettings(url=URL), None)
    delivery_id = await notify.send_test(engine, team)
    (event,) = await _events(engine, team)
    assert event["type"] == "notification.test" and delivery_id.startswith("msg_")


async def test_one_test_event_in_flight_per_team_even_when_sent_at_once(engine: AsyncEngine) -> None:
    """Issue 33 item 7: concurrent tests of one team (any process: each its own connection) queue one event."""
    team = await _team(engine, 0)
    await notifications.store(engine, team, notifications.NotificationSettings(url=URL), None)
    got = await asyncio.gather(*(notify.send_test(engine, team) for _ in range(10)), return_exceptions=True)
    assert sum(isinstance(g, str) for g in got) == 1, got
    assert all(isinstance(g, RequestLimited) for g in got if not isinstance(g, str)), got
    assert len(await _events(engine, team)) == 1
