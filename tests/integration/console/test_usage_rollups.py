"""The day totals the console reads, on SQLite and PostgreSQL: the usage rollups the request log writer
keeps equal a GROUP BY over the log rows after concurrent batches, overlapping replays and rows without a
key; the ledger's day totals equal a GROUP BY over its entries after concurrent money moves."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from sqlalchemy import func, literal_column, select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.billing import daily, ledger
from modelport.billing.settlement import Settlement, write_settlements
from modelport.billing.tables import ledger_entries
from modelport.requestlog.record import LogRecord
from modelport.requestlog.store import DAY_MS, insert_logs
from modelport.requestlog.tables import request_logs
from modelport.requestlog.usage import UsageRow, daily_usage

T0 = 1_700_000_000_000  # 2023-11-14 22:13 UTC: rows cross a UTC midnight below


def record(i: int) -> LogRecord:
    return LogRecord(
        id=f"req_roll_{i:05d}",
        team_id="team_roll",
        created_at_ms=T0 + i * 60_000,  # one a minute: 2,000 rows (33 h) span three UTC days
        status="error" if i % 7 == 0 else "success",
        provider="openai" if i % 2 else "anthropic",
        model_name="gpt-4o-mini" if i % 2 else "claude",
        endpoint="chat.completions",
        prompt_tokens=10 + i % 5,
        completion_tokens=i % 3,
        cached_tokens=None if i % 4 else 2,
        cost_micros=100 + i,
        key_id=None if i % 5 == 0 else f"key_{i % 3}",
    )


async def expected(engine: AsyncEngine) -> list[UsageRow]:
    c = request_logs.c
    day = c.created_at_ms // literal_column(str(DAY_MS))  # one SQL text in SELECT and GROUP BY
    stmt = (
        select(
            day,
            c.key_id,  # NULL groups like '' (the writer never logs an empty key id)
            c.provider,
            c.model_name,
            func.count(),
            func.sum((c.status != "success").cast(type_=request_logs.c.prompt_tokens.type)),
            func.coalesce(func.sum(c.prompt_tokens), 0),
            func.coalesce(func.sum(c.completion_tokens), 0),
            func.coalesce(func.sum(c.cached_tokens), 0),
            func.coalesce(func.sum(c.cost_micros), 0),
        )
        .where(c.team_id == "team_roll")
        .group_by(day, c.key_id, c.provider, c.model_name)
    )
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    return sorted(
        (UsageRow(int(r[0]), str(r[1] or ""), r[2], r[3], *(int(v) for v in r[4:])) for r in rows), key=_order
    )


def _order(row: UsageRow) -> tuple[int, str, str, str]:
    return row.day, row.key_id, row.provider, row.model_name


async def test_rollups_match_the_log_rows(engine: AsyncEngine) -> None:
    records = [record(i) for i in range(2000)]
    batches = [records[i : i + 250] for i in range(0, len(records), 250)]
    await asyncio.gather(*(insert_logs(engine, batch) for batch in batches))
    # Replays (a retried batch, a spill file read twice) and overlapping batches change nothing.
    assert await insert_logs(engine, records[100:900]) == 0
    await asyncio.gather(insert_logs(engine, records[:300]), insert_logs(engine, records[200:500]))
    day = T0 // DAY_MS
    found = sorted(await daily_usage(engine, "team_roll", day - 1, day + 3), key=_order)
    assert found == await expected(engine)
    assert {r.day for r in found} == {day, day + 1, day + 2}
    assert sum(r.requests for r in found) == 2000
    assert sum(r.errors for r in found) == len([i for i in range(2000) if i % 7 == 0])
    assert "" in {r.key_id for r in found}  # rows without a key count under ''
    assert await daily_usage(engine, "team_other", day - 1, day + 3) == []


async def test_a_new_row_adds_to_its_day(engine: AsyncEngine) -> None:
    first = record(0)
    await insert_logs(engine, [first])
    await insert_logs(engine, [replace(first, id="req_roll_next", cost_micros=5, prompt_tokens=None)])
    (row,) = await daily_usage(engine, "team_roll", 0, 10**7)
    assert (row.requests, row.errors, row.cost_micros, row.prompt_tokens) == (2, 2, 105, 10)


async def ledger_by_kind(engine: AsyncEngine, team_id: str) -> dict[str, tuple[int, int]]:
    c = ledger_entries.c
    stmt = select(c.kind, func.count(), func.sum(c.amount_micros)).where(c.team_id == team_id).group_by(c.kind)
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    return {str(kind): (int(n), int(total)) for kind, n, total in rows}


async def test_ledger_day_totals_follow_every_entry(engine: AsyncEngine) -> None:
    """Concurrent top-ups, reservations, settlements (two teams in one batch) and a media task's freeze and
    settle: the day totals equal a GROUP BY over the entries, and add up to the balance."""
    a = await accounts.create_team(engine, "daily-a", tier="free")
    b = await accounts.create_team(engine, "daily-b", tier="free")

    async def reserve_and_settle(i: int) -> None:
        held = await ledger.reserve(
            engine, a.id, want_micros=100_000, minimum_micros=100_000, ref=f"r{i}", owner="t", lease_until_ms=2**62
        )
        if held is not None:
            await write_settlements(
                engine,
                [Settlement(a.id, 100_000, 30_000 + i, f"q{i}", release_ref=f"r{i}"), Settlement(b.id, 0, 7, f"b{i}")],
            )

    await asyncio.gather(
        *(ledger.topup(engine, team.id, 1_000_000) for team in (a, b) for _ in range(5)),
        *(reserve_and_settle(i) for i in range(40)),
    )
    async with engine.begin() as conn:
        frozen = await ledger.freeze_in(conn, a.id, 2_000, ref="task_1", kind="task_hold")
        assert frozen is not None
    async with engine.begin() as conn:
        await ledger.settle_in(
            conn, a.id, held_micros=2_000, cost_micros=1_500, ref="task_1", release_kind="task_release"
        )
    for team in (a, b):
        totals = await daily.totals(engine, team.id, 0, 10**7)
        assert totals == await ledger_by_kind(engine, team.id)
        fresh = await accounts.get_team(engine, team.id)
        assert sum(amount for _, amount in totals.values()) == fresh.balance_micros
    assert (await daily.totals(engine, a.id, 0, 10**7))["task_release"] == (1, 2_000)
