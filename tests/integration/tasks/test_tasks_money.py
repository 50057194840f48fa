"""Money of media tasks on SQLite and PostgreSQL: the freeze at creation never overdraws, and every task
settles exactly once however many finishers race on it."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.accounts.tables import teams
from modelport.billing.ledger import ledger_sum, topup
from modelport.billing.tables import ledger_entries
from modelport.catalog import CatalogStore
from modelport.clock import now_ms
from modelport.media.files.storage.local import LocalFileStore
from modelport.media.tasks import reads
from modelport.media.tasks.executor import TaskExecutor
from modelport.media.tasks.rows import NewTask
from modelport.media.tasks.states import TaskStatus
from modelport.net import SafeFetcher
from modelport.settings import NetSettings, TasksSettings
from tests.support.task_rows import task_transitions

PRICE = 2000


def new_task(team_id: str, price: int = PRICE) -> NewTask:
    now = now_ms()
    return NewTask(
        id="task_" + secrets.token_hex(16),
        team_id=team_id,
        model_id="local/sketch-image",
        input={"prompt": "x"},
        seed=1,
        price_micros=price,
        webhook_url=None,
        deadline_ms=now + 600_000,
        created_at_ms=now,
    )


async def team_state(engine: AsyncEngine, team_id: str) -> tuple[int, int]:
    async with engine.connect() as conn:
        row = (
            await conn.execute(select(teams.c.balance_micros, teams.c.frozen_micros).where(teams.c.id == team_id))
        ).one()
    return int(row[0]), int(row[1])


async def test_200_concurrent_creations_against_a_balance_for_20(engine: AsyncEngine) -> None:
    team = await accounts.create_team(engine, "t200", tier="free")
    await topup(engine, team.id, 20 * PRICE)
    results = await asyncio.gather(
        *(task_transitions(engine).create(new_task(team.id), max_unfinished=1000) for _ in range(200))
    )
    outcomes = [outcome for outcome, _ in results]
    assert outcomes.count("created") == 20 and outcomes.count("insufficient_balance") == 180
    balance, frozen = await team_state(engine, team.id)
    assert (balance, frozen) == (0, 20 * PRICE)
    assert await ledger_sum(engine, team.id) == balance


async def test_concurrency_limit_holds_under_a_burst(engine: AsyncEngine) -> None:
    team = await accounts.create_team(engine, "burst", tier="free")
    await topup(engine, team.id, 1_000_000)
    results = await asyncio.gather(
        *(task_transitions(engine).create(new_task(team.id), max_unfinished=3) for _ in range(40))
    )
    assert [o for o, _ in results].count("created") == 3
    balance, frozen = await team_state(engine, team.id)
    assert frozen == 3 * PRICE and balance == 1_000_000 - 3 * PRICE


async def test_racing_finishers_settle_each_task_once(engine: AsyncEngine) -> None:
    team = await accounts.create_team(engine, "racers", tier="free")
    await topup(engine, team.id, 1_000_000)
    tasks = [new_task(team.id) for _ in range(12)]
    for task in tasks:
        assert (await task_transitions(engine).create(task, max_unfinished=100))[0] == "created"

    async def race(task: NewTask, index: int) -> list[Any]:
        claimed = await task_transitions(engine).claim(task.id, lease_ms=60_000, max_attempts=3, worker="w")
        assert claimed is not None
        run = claimed.attempts
        # Two successes of the same run (a duplicate delivery), a deadline failure and a stale run's failure.
        contenders = [
            task_transitions(engine).finish_success(
                task.id,
                run,
                files=[],
                cost_micros=PRICE,
                metadata={},
                result_expires_at_ms=now_ms() + 1000,
            ),
            task_transitions(engine).finish_success(
                task.id,
                run,
                files=[],
                cost_micros=PRICE,
                metadata={},
                result_expires_at_ms=now_ms() + 1000,
            ),
            task_transitions(engine).finish_failure(task.id, status=TaskStatus.FAILED, code="x", message="x"),
            task_transitions(engine).finish_failure(
                task.id, status=TaskStatus.FAILED, code="x", message="x", run=run - 1
            ),
        ]
        if index % 2:
            contenders.reverse()
        return list(await asyncio.gather(*contenders))

    results = await asyncio.gather(*(race(t, i) for i, t in enumerate(tasks)))
    for outcome in results:
        assert sum(1 for r in outcome if r is not None) == 1
    balance, frozen = await team_state(engine, team.id)
    assert frozen == 0 and await ledger_sum(engine, team.id) == balance
    async with engine.connect() as conn:
        rows = (await conn.execute(select(ledger_entries).where(ledger_entries.c.team_id == team.id))).all()
    for task in tasks:
        kinds = sorted(r.kind for r in rows if r.ref == task.id)
        assert kinds in (["charge", "task_hold", "task_release"], ["task_hold", "task_release"]), kinds
    charged = sum(-int(r.amount_micros) for r in rows if r.kind == "charge")
    assert balance == 1_000_000 - charged


async def test_a_cost_above_the_freeze_is_capped(engine: AsyncEngine) -> None:
    team = await accounts.create_team(engine, "capped", tier="free")
    await topup(engine, team.id, 10_000)
    task = new_task(team.id)
    await task_transitions(engine).create(task, max_unfinished=5)
    claimed = await task_transitions(engine).claim(task.id, lease_ms=60_000, max_attempts=3, worker="w")
    assert claimed is not None
    done = await task_transitions(engine).finish_success(
        task.id,
        claimed.attempts,
        files=[],
        cost_micros=10 * PRICE,
        metadata={},
        result_expires_at_ms=now_ms() + 1000,
    )
    assert done is not None and done.cost_micros == PRICE
    assert await team_state(engine, team.id) == (10_000 - PRICE, 0)


async def test_a_task_whose_workers_keep_dying_fails_and_is_refunded(engine: AsyncEngine) -> None:
    team = await accounts.create_team(engine, "poison", tier="free")
    await topup(engine, team.id, 10_000)
    task = new_task(team.id)
    await task_transitions(engine).create(task, max_unfinished=5)
    for attempt in range(1, 4):  # three runs whose leases ran out at once (their workers were killed)
        claimed = await task_transitions(engine).claim(task.id, lease_ms=-1, max_attempts=3, worker=f"w{attempt}")
        assert claimed is not None and claimed.attempts == attempt
    assert await task_transitions(engine).claim(task.id, lease_ms=60_000, max_attempts=3, worker="w4") is None

    ended: list[str] = []
    executor = TaskExecutor(
        engine=engine,
        catalog=CatalogStore(engine),
        store=LocalFileStore(Path("/nonexistent")),
        fetcher=SafeFetcher(NetSettings()),
        settings=TasksSettings(max_attempts=3),
        transitions=task_transitions(engine),
        on_terminal=lambda: ended.append("x"),
    )
    await executor.handle(task.id)
    row = await reads.get(engine, task.id)
    assert row is not None and row.status == "failed" and row.error_code == "too_many_attempts"
    assert ended == ["x"]
    assert await team_state(engine, team.id) == (10_000, 0)
    await executor.handle(task.id)  # a duplicate delivery afterwards changes nothing
    assert ended == ["x"] and await team_state(engine, team.id) == (10_000, 0)
