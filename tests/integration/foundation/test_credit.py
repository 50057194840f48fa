"""Credit reservations (billing.credit) and stale-hold recovery, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import time

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.billing import ledger, reservations
from modelport.billing.credit import Allocation, CreditBook
from modelport.billing.settlement import SettlementWriter
from modelport.billing.tables import credit_reservations
from modelport.settings import CreditSettings


async def _team(engine: AsyncEngine, name: str, micros: int) -> str:
    team = await accounts.create_team(engine, name, tier="free")
    if micros:
        await ledger.topup(engine, team.id, micros)
    return team.id


async def test_concurrent_admissions_never_exceed_the_balance(engine: AsyncEngine) -> None:
    team = await _team(engine, "credit-a", 1_000)
    writer = SettlementWriter(engine, flush_interval=0.01)
    await writer.start()  # slices shrink as the balance gets low; their unused rests come back through it
    book = CreditBook(engine, writer)
    results = await asyncio.gather(*(book.admit(team, 30) for _ in range(100)))
    admitted = [a for a in results if a is not None]
    assert len(admitted) == 1_000 // 30  # exactly what the balance covers, however the reservations fell
    fresh = await accounts.get_team(engine, team)
    assert fresh.balance_micros + fresh.frozen_micros == 1_000
    assert fresh.frozen_micros >= 30 * len(admitted)
    for allocation in admitted:
        book.settle(allocation, 20, "req")
    await book.aclose()
    await writer.aclose()
    fresh = await accounts.get_team(engine, team)
    assert fresh.frozen_micros == 0
    assert fresh.balance_micros == 1_000 - 20 * len(admitted)
    assert await ledger.ledger_sum(engine, team) == fresh.balance_micros


async def test_a_team_short_of_the_estimate_is_held_what_it_has_down_to_the_minimum(engine: AsyncEngine) -> None:
    """Output caps by credit (issue 20 rule 3): with a minimum, a team whose balance cannot cover the whole
    estimate is held all it has (including the rest of this process's own slice, written back first)."""
    team = await _team(engine, "credit-short", 1_000)
    writer = SettlementWriter(engine, flush_interval=0.01)
    await writer.start()
    book = CreditBook(engine, writer, CreditSettings(ask_back_wait_seconds=0.2))
    first = await book.admit(team, 200)  # a slice of a quarter of the balance (250), 200 of it held
    assert first is not None and first.estimate_micros == 200
    short = await book.admit(team, 5_000, minimum_micros=200)
    assert short is not None and short.estimate_micros == 800  # the whole rest, the slice's unused 50 included
    assert await book.admit(team, 5_000, minimum_micros=200) is None  # nothing left: not even the minimum
    assert await book.admit(team, 5_000) is None
    fresh = await accounts.get_team(engine, team)
    assert (fresh.balance_micros, fresh.frozen_micros) == (0, 1_000)
    book.settle(first, 200, "req-first")
    book.settle(short, 650, "req-short")
    await book.aclose()
    await writer.aclose()
    fresh = await accounts.get_team(engine, team)
    assert (fresh.balance_micros, fresh.frozen_micros) == (150, 0)
    assert await ledger.ledger_sum(engine, team) == 150


async def test_cost_above_estimate_is_charged_from_the_balance(engine: AsyncEngine) -> None:
    team = await _team(engine, "credit-b", 500)
    writer = SettlementWriter(engine)
    book = CreditBook(engine, writer)
    allocation = await book.admit(team, 100)
    assert allocation is not None
    book.settle(allocation, 180, "req-over")
    await book.aclose()
    await writer.aclose()
    fresh = await accounts.get_team(engine, team)
    assert (fresh.balance_micros, fresh.frozen_micros) == (320, 0)
    assert await ledger.ledger_sum(engine, team) == 320


async def test_idle_reservation_goes_back(engine: AsyncEngine) -> None:
    team = await _team(engine, "credit-c", 10_000)
    writer = SettlementWriter(engine, flush_interval=0.01)
    await writer.start()
    book = CreditBook(engine, writer, CreditSettings(idle_return_seconds=0.1))
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
    await book.aclose()
    await writer.aclose()


async def test_two_processes_never_refuse_while_the_team_can_pay(engine: AsyncEngine) -> None:
    # Two processes' books on one database; the team has 20 estimates' worth and spends 18. Before, the
    # first process reserved 16 of them and the second refused after its 4 although the team could pay.
    estimate = 1_000
    team = await _team(engine, "credit-two", 20 * estimate)
    writer = SettlementWriter(engine, flush_interval=0.01)
    await writer.start()
    books = [CreditBook(engine, writer, _fast()) for _ in range(2)]
    for book in books:
        await book.start()

    async def request(i: int) -> bool:
        await asyncio.sleep(i * 0.02)  # spread over both processes, overlapping
        book = books[i % 2]
        allocation = await book.admit(team, estimate)
        if allocation is None:
            return False
        await asyncio.sleep(0.05)
        book.settle(allocation, estimate, f"req-{i}")
        return True

    admitted = await asyncio.gather(*(request(i) for i in range(18)))
    assert all(admitted), admitted
    for book in books:
        await book.aclose()
    await writer.aclose()
    fresh = await accounts.get_team(engine, team)
    assert (fresh.balance_micros, fresh.frozen_micros) == (2 * estimate, 0)
    assert await ledger.ledger_sum(engine, team) == fresh.balance_micros


async def test_refused_only_when_the_team_cannot_pay(engine: AsyncEngine) -> None:
    team = await _team(engine, "credit-poor", 2_500)
    writer = SettlementWriter(engine, flush_interval=0.01)
    await writer.start()
    books = [CreditBook(engine, writer, _fast()) for _ in range(2)]
    for book in books:
        await book.start()
    first = await books[0].admit(team, 1_000)
    second = await books[1].admit(team, 1_000)  # the first process held the rest: asked back, then taken
    assert first is not None and second is not None
    assert await books[1].admit(team, 1_000) is None  # 500 left in total: truly short
    books[0].settle(first, 1_000, "req-1")
    books[1].settle(second, 1_000, "req-2")
    for book in books:
        await book.aclose()
    await writer.aclose()
    fresh = await accounts.get_team(engine, team)
    assert (fresh.balance_micros, fresh.frozen_micros) == (500, 0)


async def test_a_dead_process_reservation_comes_back_after_its_lease(engine: AsyncEngine) -> None:
    team = await _team(engine, "credit-dead", 10_000)
    writer = SettlementWriter(engine, flush_interval=0.01)
    await writer.start()
    dead = CreditBook(engine, writer, _fast())
    first = await dead.admit(team, 100)
    second = await dead.admit(team, 100)
    assert first is not None and second is not None
    dead.settle(first, 70, "req-1")
    await writer.flush()  # the first request's settlement landed; then the process "dies" (never renews)
    assert (await accounts.get_team(engine, team)).frozen_micros > 0
    alive = CreditBook(engine, writer, _fast())
    await alive.start()
    started = time.monotonic()
    for _ in range(200):
        if not (await accounts.get_team(engine, team)).frozen_micros:
            break
        await asyncio.sleep(0.05)
    recovered = time.monotonic() - started
    fresh = await accounts.get_team(engine, team)
    assert (fresh.balance_micros, fresh.frozen_micros) == (10_000 - 70, 0)
    assert recovered < 0.5 + 0.2 + 1.0  # the lease, a sweep interval and some slack
    assert await ledger.ledger_sum(engine, team) == fresh.balance_micros
    # A settlement of the swept reservation arriving late (a spill replayed after the sweep) only charges.
    dead.settle(second, 40, "req-2")
    await writer.flush()
    fresh = await accounts.get_team(engine, team)
    assert (fresh.balance_micros, fresh.frozen_micros) == (10_000 - 70 - 40, 0)
    assert await ledger.ledger_sum(engine, team) == fresh.balance_micros
    await alive.aclose()
    await writer.aclose()
    async with engine.connect() as conn:
        assert (await conn.execute(select(func.count()).select_from(credit_reservations))).scalar_one() == 0


async def test_concurrent_sweeps_return_each_reservation_once(engine: AsyncEngine) -> None:
    team = await _team(engine, "credit-sweeps", 100_000)
    for i in range(20):
        amount = await ledger.reserve(
            engine, team, want_micros=1_000, minimum_micros=1_000, ref=f"rsv_{i}", owner="gone", lease_until_ms=1
        )
        assert amount == 1_000
    counts = await asyncio.gather(*(reservations.sweep(engine, limit=3) for _ in range(4)))
    assert sum(counts) == 20
    fresh = await accounts.get_team(engine, team)
    assert (fresh.balance_micros, fresh.frozen_micros) == (100_000, 0)
    assert await ledger.ledger_sum(engine, team) == 100_000


def _fast() -> CreditSettings:
    return CreditSettings(lease_seconds=0.5, sweep_interval_seconds=0.2, idle_return_seconds=1.0)


async def test_a_process_waits_for_money_another_holds_unused(engine: AsyncEngine) -> None:
    # Two books are two processes. The first holds a slice with one request in flight; the second uses up
    # the rest, then must not refuse while the team's money sits unused in the first one's slice.
    team = await _team(engine, "credit-e", 2_000)
    writer = SettlementWriter(engine, flush_interval=0.01)
    await writer.start()
    first, second = CreditBook(engine, writer), CreditBook(engine, writer)
    for book in (first, second):
        await book.start()  # every process runs its book's background work
    held = await first.admit(team, 100)
    assert held is not None
    admitted: list[Allocation] = []
    while (allocation := await second.admit(team, 100)) is not None and len(admitted) < 30:
        admitted.append(allocation)
        if len(admitted) == 12:
            asyncio.get_running_loop().call_later(0.3, first.settle, held, 100, "req-first")
    # 20 estimates in all: the first's one request plus the second's 19, the last ones from the first's
    # slice once its request ended.
    assert len(admitted) == 19
    for allocation in admitted:
        second.settle(allocation, 100, "req-second")
    for book in (first, second):
        await book.aclose()
    await writer.aclose()
    fresh = await accounts.get_team(engine, team)
    assert (fresh.balance_micros, fresh.frozen_micros) == (0, 0)
    assert await ledger.ledger_sum(engine, team) == 0
