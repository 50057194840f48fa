"""Per-process credit reservations: admission without a database write per request.

A process reserves a slice of a team's balance in the database (a conditional, locked `reserve`: the
money moves from available to frozen, with a `hold` ledger entry whose ref is the reservation id) and
admits requests against that slice in memory. Each request holds its estimate from the slice; when it ends,
its actual cost is settled in the background: the consumed part (at most the estimate) is released from
the reservation and charged (`release` entry with the reservation's ref, `charge` entry with the request
id), and any cost above the estimate is charged from the balance. The unused rest of a reservation goes
back (a `release` with the reservation's ref) when the team has been idle for `idle_return_seconds`, when
the reservation is older than `max_age_seconds`, and at shutdown.

Why it keeps the billing guarantee: every reservation is conditional on the balance in the database, so
all processes together never freeze more than the team has; within a process, admission never hands out
more than its reservation. The balance goes below zero only by what requests cost above their estimate.

Crash bound: a process killed hard leaves its reservations frozen; `settlement.release_stale_holds` (at
every start) returns what each reservation still has outstanding once it is older than two hours —
reservations are rotated after `max_age_seconds`, so no live reservation is that old.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.billing import ledger
from modelport.billing.settlement import Settlement, SettlementWriter
from modelport.ids import new_id

log = logging.getLogger("modelport.billing.credit")

# A reservation covers this many estimates of the request that needed it (capped by the balance).
RESERVE_FACTOR = 16


@dataclass(frozen=True, slots=True)
class Allocation:
    team_id: str
    reservation: str
    estimate_micros: int


@dataclass(slots=True)
class _TeamCredit:
    reservation: str | None = None
    reserved_at: float = 0.0
    available: int = 0  # reserved and not handed out
    in_flight: int = 0
    last_used: float = 0.0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class CreditBook:
    def __init__(
        self,
        engine: AsyncEngine,
        settlements: SettlementWriter,
        *,
        idle_return_seconds: float = 1.0,
        max_age_seconds: float = 60.0,
    ) -> None:
        self._engine = engine
        self._settlements = settlements
        self._idle_return = idle_return_seconds
        self._max_age = max_age_seconds
        self._teams: dict[str, _TeamCredit] = {}
        self._task: asyncio.Task[None] | None = None

    async def admit(self, team_id: str, estimate_micros: int) -> Allocation | None:
        """Take `estimate_micros` from the team's reservation, reserving more when it is short; None when
        the team's balance cannot cover the estimate."""
        credit = self._teams.get(team_id)
        if credit is None:
            credit = self._teams[team_id] = _TeamCredit()
        if self._short(credit, estimate_micros):
            async with credit.lock:
                # Re-check: another request may have reserved while this one waited for the lock.
                if self._short(credit, estimate_micros) and not await self._reserve(team_id, credit, estimate_micros):
                    return None
        assert credit.reservation is not None
        credit.available -= estimate_micros
        credit.in_flight += 1
        credit.last_used = time.monotonic()
        return Allocation(team_id, credit.reservation, estimate_micros)

    def settle(self, allocation: Allocation, cost_micros: int, request_id: str) -> None:
        """The request ended and cost `cost_micros`: settle it in the background; the unused part of its
        estimate goes back to the reservation it came from (or to the team, if that one was returned)."""
        consumed = min(cost_micros, allocation.estimate_micros)
        self._settlements.submit(
            Settlement(allocation.team_id, consumed, cost_micros, request_id, release_ref=allocation.reservation)
        )
        unused = allocation.estimate_micros - consumed
        credit = self._teams.get(allocation.team_id)
        if credit is not None:
            credit.in_flight -= 1
            credit.last_used = time.monotonic()
        if credit is not None and credit.reservation == allocation.reservation:
            credit.available += unused
        elif unused:
            self._settlements.submit(Settlement(allocation.team_id, unused, 0, allocation.reservation))

    def _short(self, credit: _TeamCredit, estimate: int) -> bool:
        return (
            credit.reservation is None
            or credit.available < estimate
            or time.monotonic() - credit.reserved_at > self._max_age
        )

    async def _reserve(self, team_id: str, credit: _TeamCredit, estimate: int) -> bool:
        # Rotate: give back what is left of the current reservation, then take a new one.
        self._return(team_id, credit)
        ref = new_id("rsv")
        amount = await ledger.reserve(
            self._engine, team_id, want_micros=estimate * RESERVE_FACTOR, minimum_micros=estimate, ref=ref
        )
        if amount is None:
            return False
        credit.reservation, credit.reserved_at, credit.available = ref, time.monotonic(), amount
        return True

    def _return(self, team_id: str, credit: _TeamCredit) -> None:
        if credit.reservation is not None and credit.available > 0:
            self._settlements.submit(Settlement(team_id, credit.available, 0, credit.reservation))
        credit.reservation, credit.available = None, 0

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._sweep(), name="credit-returner")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for team_id, credit in self._teams.items():
            self._return(team_id, credit)

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(min(self._idle_return, 1.0) / 2)
            now = time.monotonic()
            for team_id, credit in list(self._teams.items()):
                if credit.lock.locked() or credit.reservation is None:
                    continue
                idle = credit.in_flight == 0 and now - credit.last_used >= self._idle_return
                if idle or now - credit.reserved_at > self._max_age:
                    self._return(team_id, credit)
                if credit.reservation is None and credit.in_flight == 0:
                    del self._teams[team_id]
