"""Settling holds off the hot path: queued, batched into one transaction, drained at shutdown.

A request's hold is written on the hot path (admission must be exact); its settlement (release the hold,
charge the actual cost) is queued here and written within `flush_interval` seconds, many per
transaction. Crash bound: a hard kill loses at most the queued settlements, whose holds then stay frozen
until `release_stale_holds` (run at start-up and periodically) releases holds older than `stale_after`
with no settlement — charging nothing, since their usage is unknown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.clock import now_ms
from modelport.storage.tables import ledger_entries, teams

log = logging.getLogger("modelport.billing")


@dataclass(frozen=True, slots=True)
class Settlement:
    """Release `held_micros` from frozen and charge `cost_micros`.

    `ref` names the request (the charge's ref). `release_ref` names the hold the released money came from
    when that is not the request itself (a credit reservation, see `billing.credit`); the release entry
    carries it, so a hold's outstanding amount is always its amount less the releases with its ref.
    """

    team_id: str
    held_micros: int
    cost_micros: int
    ref: str
    release_ref: str | None = None


class SettlementWriter:
    def __init__(self, engine: AsyncEngine, *, flush_interval: float = 0.2, max_batch: int = 500) -> None:
        self._engine = engine
        self._flush_interval = flush_interval
        self._max_batch = max_batch
        self._queue: list[Settlement] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    def submit(self, item: Settlement) -> None:
        self._queue.append(item)
        if len(self._queue) >= self._max_batch:
            self._wake.set()

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="settlement-writer")

    async def close(self) -> None:
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await self._task
            self._task = None
        await self.flush()

    async def flush(self) -> None:
        while self._queue:
            batch, self._queue = self._queue[: self._max_batch], self._queue[self._max_batch :]
            try:
                await write_settlements(self._engine, batch)
            except Exception:
                # Keep them for the next round: a settlement is money and must not be dropped.
                log.exception("settlement batch failed; will retry")
                self._queue[:0] = batch
                raise

    async def _run(self) -> None:
        while not self._closing:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self._flush_interval)
            self._wake.clear()
            try:
                await self.flush()
            except Exception:
                await asyncio.sleep(1.0)

    @property
    def pending(self) -> int:
        return len(self._queue)


_MOVE = (
    update(teams)
    .where(teams.c.id == bindparam("team_id"))
    .values(
        balance_micros=teams.c.balance_micros + bindparam("balance_delta"),
        frozen_micros=teams.c.frozen_micros + bindparam("frozen_delta"),
    )
)


async def write_settlements(engine: AsyncEngine, batch: list[Settlement]) -> None:
    at = now_ms()
    # The balance moves are additive, so one UPDATE per team (not per settlement) gives the same balances.
    # Teams in id order: concurrent batches (several processes on PostgreSQL) lock rows in one order.
    moves: dict[str, list[int]] = {}
    for item in batch:
        move = moves.setdefault(item.team_id, [0, 0])
        move[0] += item.held_micros - item.cost_micros
        move[1] -= item.held_micros
    async with engine.begin() as conn:
        if moves:
            rows = [{"team_id": team, "balance_delta": b, "frozen_delta": f} for team, (b, f) in sorted(moves.items())]
            await conn.execute(_MOVE, rows)
        entries = []
        for item in batch:
            if item.held_micros:
                release_ref = item.release_ref or item.ref
                note = item.ref if release_ref != item.ref else None
                entries.append(
                    {
                        "team_id": item.team_id,
                        "kind": "release",
                        "amount_micros": item.held_micros,
                        "ref": release_ref,
                        "note": note,
                        "created_at_ms": at,
                    }
                )
            if item.cost_micros:
                entries.append(
                    {
                        "team_id": item.team_id,
                        "kind": "charge",
                        "amount_micros": -item.cost_micros,
                        "ref": item.ref,
                        "note": None,
                        "created_at_ms": at,
                    }
                )
        if entries:
            await conn.execute(insert(ledger_entries), entries)


async def release_stale_holds(engine: AsyncEngine, *, stale_after_ms: int) -> int:
    """Release what is still frozen of holds older than `stale_after_ms` (their process died before it
    settled them): each hold's amount less the releases that carry its ref. Nothing is charged for them,
    since their usage is unknown."""
    cutoff = now_ms() - stale_after_ms
    holds = (
        select(ledger_entries.c.team_id, ledger_entries.c.ref, (-ledger_entries.c.amount_micros).label("held"))
        .where(
            ledger_entries.c.kind == "hold", ledger_entries.c.created_at_ms < cutoff, ledger_entries.c.ref.is_not(None)
        )
        .subquery()
    )
    released = (
        select(ledger_entries.c.ref, func.sum(ledger_entries.c.amount_micros).label("released"))
        .where(ledger_entries.c.kind == "release")
        .group_by(ledger_entries.c.ref)
        .subquery()
    )
    stmt = select(
        holds.c.team_id, holds.c.ref, (holds.c.held - func.coalesce(released.c.released, 0)).label("left")
    ).join(released, released.c.ref == holds.c.ref, isouter=True)
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    stale = [Settlement(r.team_id, int(r.left), 0, r.ref) for r in rows if int(r.left) > 0]
    if stale:
        await write_settlements(engine, stale)
        log.warning("released %d stale holds", len(stale))
    return len(stale)
