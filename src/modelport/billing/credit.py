"""Per-process credit reservations: admission without a database write per request.

A process reserves a slice of a team's balance in the database (a conditional, locked `reserve`: the
money moves from available to frozen, with a `hold` ledger entry whose ref is the reservation id and a lease
row owned by this process) and admits requests against that slice in memory. Each request holds its
estimate from the slice; when it ends, its actual cost is settled in the background: the consumed part (at
most the estimate) is released from the reservation and charged (`release` entry with the reservation's
ref, `charge` entry with the request id), and any cost above the estimate is charged from the balance.

A slice is `RESERVE_FACTOR` estimates, or what the team spent here in the last `RESERVE_SECONDS` when that
is more (at most `MAX_RESERVE_FACTOR` estimates), and at most `1/FAIR_SHARE` of the available balance (at
least one estimate), so as the balance runs low reservations shrink and other processes still find money. The
unused rest of a reservation goes back when the team has been idle for `idle_return_seconds`, when the
reservation is older than `max_age_seconds`, when another process asks for it, when the spend limit of the
key it holds for was lowered (at the first request that carries the new limit: within the auth cache bound),
and at shutdown. When a
process cannot reserve one estimate but other processes hold reservations of the team, it asks them back
(`reservations.ask_back`; they see it within `TICK_SECONDS`) and retries for up to `ask_back_wait_seconds`
before answering 402: a request is refused only when the team as a whole cannot pay its estimate.

Why it keeps the billing guarantee: every reservation is conditional on the balance in the database, so
all processes together never freeze more than the team has; within a process, admission never hands out
more than its reservation. The balance goes below zero only by what requests cost above their estimate.

Crash bound: a process killed hard stops renewing its leases; within `lease_seconds` plus
`sweep_interval_seconds` a sweep in any live process (`reservations.sweep`) returns what its reservations
still hold, charging nothing for the requests it had in flight (their usage is unknown).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.billing import ledger, reservations
from modelport.billing.key_budget import KeyBudgetShort, KeyHold
from modelport.billing.settlement import RESERVATION_PREFIX, Settlement, SettlementWriter
from modelport.clock import now_ms
from modelport.ids import new_id
from modelport.services import ServiceKey
from modelport.settings import CreditSettings

log = logging.getLogger("modelport.billing.credit")
CREDIT: ServiceKey[CreditBook] = ServiceKey("credit")

# A reservation covers this many estimates of the request that needed it, or what the team spent in this
# process over the last RESERVE_SECONDS when that is more (a busy team then takes about one reservation a
# second instead of one per 16 requests: each is a locked database write the requests behind it wait for),
# at most MAX_RESERVE_FACTOR estimates...
RESERVE_FACTOR = 16
RESERVE_SECONDS = 1.0
MAX_RESERVE_FACTOR = 4096
# ...and never more than this fraction of the team's available balance (but at least one estimate).
FAIR_SHARE = 4
# How often the background task looks at idle reservations and requests from other processes.
TICK_SECONDS = 0.1
# How often a waiting request retries its reservation while other processes return theirs.
RETRY_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class Allocation:
    team_id: str
    reservation: str
    estimate_micros: int
    # The key whose spend limit the reservation also holds (None: the team's money only).
    key: KeyHold | None = None


@dataclass(slots=True)
class _Reservation:
    ref: str
    team_id: str
    reserved_at: float
    amount: int = 0
    in_flight: int = 0
    returned: bool = False  # its unused part went back; it closes when its last request settles
    key: KeyHold | None = None


@dataclass(slots=True)
class _TeamCredit:
    current: _Reservation | None = None
    available: int = 0  # reserved in `current` and not handed out
    rate: float = 0.0  # micro-USD per second handed out from the last reservation that ran short
    in_flight: int = 0
    last_used: float = 0.0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # A key with a spend limit is a budget holder of its own: its reservations hold the team's money and
    # the key's limit together (ledger.reserve with the key), so neither can be overspent.
    key: KeyHold | None = None


def _holder(team_id: str, key: KeyHold | None) -> str:
    return team_id if key is None else f"{key.key_id}@{key.period_ms}"


class CreditBook:
    def __init__(
        self,
        engine: AsyncEngine,
        settlements: SettlementWriter,
        settings: CreditSettings | None = None,
        *,
        max_age_seconds: float = 60.0,
    ) -> None:
        self._engine = engine
        self._settlements = settlements
        self._settings = settings or CreditSettings()
        self._max_age = max_age_seconds
        # Names the process in `credit_reservations.owner` (host and pid help an operator; the random part
        # keeps a reused pid apart).
        self._owner = f"{socket.gethostname()[:32]}-{os.getpid()}-{secrets.token_hex(4)}"
        self._teams: dict[str, _TeamCredit] = {}  # by holder: a team, or a limited key's period
        # Every reservation of this process not closed yet (current ones and returned ones with requests).
        self._reservations: dict[str, _Reservation] = {}
        self._task: asyncio.Task[None] | None = None

    @property
    def owner(self) -> str:
        return self._owner

    async def admit(
        self, team_id: str, estimate_micros: int, key: KeyHold | None = None, minimum_micros: int | None = None
    ) -> Allocation | None:
        """Take `estimate_micros` from the team's reservation (with `key`, the reservation of that key's
        period, held against the team and the key's limit), reserving more when it is short; None when the
        team as a whole (available balance and what other processes hold unused) cannot cover it; raises
        KeyBudgetShort when the key's limit cannot.

        With `minimum_micros` (below the estimate), a team whose available balance cannot cover the whole
        estimate is admitted with what it has, down to that minimum: the allocation's `estimate_micros` is
        what was held (the caller caps the request's output to it; docs/api/text-gateway.md, Billing)."""
        minimum = estimate_micros if minimum_micros is None else max(0, min(minimum_micros, estimate_micros))
        holder = team_id if key is None else _holder(team_id, key)
        credit = self._teams.get(holder)
        if credit is None:
            credit = self._teams[holder] = _TeamCredit(key=key)
        elif key is not None:
            credit.key = key  # the limit may have changed: the next reservation holds against the new one
        if self._short(credit, estimate_micros) or self._above_limit(credit, key):
            async with credit.lock:
                if self._above_limit(credit, key):
                    # The key's limit was lowered: the slice reserved under the old one goes back before
                    # anything more is admitted, and the next one is held against the new limit.
                    self._return(credit)
                # Re-check: another request may have reserved while this one waited for the lock.
                if self._short(credit, estimate_micros):
                    short = await self._reserve(team_id, credit, estimate_micros, minimum)
                    if short == "key":
                        raise KeyBudgetShort(key.key_id if key else "")
                    if short is not None:
                        return None
        current = credit.current
        assert current is not None
        held = min(estimate_micros, credit.available)
        credit.available -= held
        credit.in_flight += 1
        current.in_flight += 1
        credit.last_used = time.monotonic()
        return Allocation(team_id, current.ref, held, key)

    def settle(self, allocation: Allocation, cost_micros: int, request_id: str) -> None:
        """The request ended and cost `cost_micros`: settle it in the background; the unused part of its
        estimate goes back to the reservation it came from (or to the team, if that one was returned)."""
        credit = self._teams.get(_holder(allocation.team_id, allocation.key))
        if credit is not None:
            credit.in_flight -= 1
            credit.last_used = time.monotonic()
        reservation = self._reservations.get(allocation.reservation)
        consumed = min(cost_micros, allocation.estimate_micros)
        if reservation is not None:
            reservation.in_flight -= 1
        if reservation is not None and not reservation.returned and credit is not None:
            credit.available += allocation.estimate_micros - consumed
            held, closes = consumed, False
        else:
            # Returned (or lost to a sweep): the whole estimate goes back to the team now.
            held = allocation.estimate_micros
            closes = reservation is not None and reservation.in_flight == 0
            if closes:
                del self._reservations[allocation.reservation]
        key = allocation.key
        self._settlements.submit(
            Settlement(
                allocation.team_id,
                held,
                cost_micros,
                request_id,
                release_ref=allocation.reservation,
                closes=closes,
                key_id=None if key is None else key.key_id,
                key_period_ms=0 if key is None else key.period_ms,
            )
        )

    @staticmethod
    def _above_limit(credit: _TeamCredit, key: KeyHold | None) -> bool:
        """Was the holder's current reservation taken under a higher spend limit than the key has now?"""
        held = None if credit.current is None else credit.current.key
        return key is not None and held is not None and key.limit_micros < held.limit_micros

    def _short(self, credit: _TeamCredit, estimate: int) -> bool:
        return (
            credit.current is None
            or credit.available < estimate
            or time.monotonic() - credit.current.reserved_at > self._max_age
        )

    async def _reserve(self, team_id: str, credit: _TeamCredit, estimate: int, minimum: int) -> str | None:
        """Take a new reservation for the holder; None when done, else who is short: `team` or `key`."""
        current = credit.current
        if current is not None and credit.available < estimate:  # used up (not rotated for its age)
            age = max(time.monotonic() - current.reserved_at, 0.05)
            credit.rate = (current.amount - credit.available) / age
        else:
            credit.rate = 0.0
        want = min(max(estimate * RESERVE_FACTOR, int(credit.rate * RESERVE_SECONDS)), estimate * MAX_RESERVE_FACTOR)
        # Rotate: give back what is left of the current reservation, then take a new one.
        self._return(credit)
        deadline = time.monotonic() + self._settings.ask_back_wait_seconds
        asked = False
        key = credit.key
        while True:
            ref = new_id(RESERVATION_PREFIX.rstrip("_"))
            short = "team"
            try:
                amount = await ledger.reserve(
                    self._engine,
                    team_id,
                    want_micros=want,
                    minimum_micros=estimate,
                    ref=ref,
                    owner=self._owner,
                    lease_until_ms=self._lease_until(),
                    share_divisor=FAIR_SHARE,
                    key=key,
                )
                if amount is None and minimum < estimate:
                    amount = await self._reserve_what_is_left(team_id, ref, estimate, minimum, deadline, key)
            except KeyBudgetShort:
                amount, short = None, "key"
            if amount is not None:
                break
            if self._settlements.pending:
                # What this process gave back (e.g. the rest of the reservation just rotated) may not be
                # written yet: write it, then retry.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                        await self._settlements.flush()
                if time.monotonic() < deadline:
                    continue
            # Short: other processes may hold the team's money unused. Ask them for it, then retry.
            if not asked:
                asked = True
                key_id = key.key_id if short == "key" and key is not None else None
                if not await reservations.ask_back(self._engine, team_id, self._owner, key_id=key_id):
                    return short
            if time.monotonic() >= deadline:
                return short
            await asyncio.sleep(RETRY_SECONDS)
        reservation = _Reservation(ref, team_id, time.monotonic(), amount, key=key)
        self._reservations[ref] = reservation
        credit.current, credit.available = reservation, amount
        return None

    async def _reserve_what_is_left(
        self, team_id: str, ref: str, estimate: int, minimum: int, deadline: float, key: KeyHold | None
    ) -> int | None:
        """The team cannot cover the whole estimate: reserve for this request alone what its available balance
        holds, up to the estimate and not below `minimum`. What this process gave back itself is written
        first, so it counts."""
        if self._settlements.pending:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    await self._settlements.flush()
        return await ledger.reserve(
            self._engine,
            team_id,
            want_micros=estimate,
            minimum_micros=minimum,
            ref=ref,
            owner=self._owner,
            lease_until_ms=self._lease_until(),
            key=key,
        )

    def _return(self, credit: _TeamCredit) -> None:
        """Give back the unused part of the team's current reservation; it closes once its requests end."""
        current = credit.current
        if current is not None:
            current.returned = True
            closes = current.in_flight == 0
            if closes:
                self._reservations.pop(current.ref, None)
            if credit.available > 0 or closes:
                key = current.key
                self._settlements.submit(
                    Settlement(
                        current.team_id,
                        credit.available,
                        0,
                        current.ref,
                        release_ref=current.ref,
                        closes=closes,
                        key_id=None if key is None else key.key_id,
                        key_period_ms=0 if key is None else key.period_ms,
                    )
                )
        credit.current, credit.available = None, 0

    def _lease_until(self) -> int:
        return now_ms() + int(self._settings.lease_seconds * 1000)

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="credit-book")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for credit in self._teams.values():
            self._return(credit)

    async def _run(self) -> None:
        renew_every = self._settings.lease_seconds / 3
        next_renew = next_sweep = time.monotonic()
        while True:
            now = time.monotonic()
            try:
                self._return_idle(now)
                await self._return_asked()
                if now >= next_renew:
                    next_renew = now + renew_every
                    await self._renew(now)
                if now >= next_sweep:
                    next_sweep = now + self._settings.sweep_interval_seconds
                    await reservations.sweep(self._engine)
            except asyncio.CancelledError:
                raise
            except Exception:  # the database may be away: keep going, the next tick tries again
                log.exception("credit reservations: background work failed")
            await asyncio.sleep(TICK_SECONDS)

    def _return_idle(self, now: float) -> None:
        for team_id, credit in list(self._teams.items()):
            if credit.lock.locked():
                continue
            if credit.current is not None:
                idle = credit.in_flight == 0 and now - credit.last_used >= self._settings.idle_return_seconds
                if idle or now - credit.current.reserved_at > self._max_age:
                    self._return(credit)
            if credit.current is None and credit.in_flight == 0:
                del self._teams[team_id]

    async def _return_asked(self) -> None:
        if not any(c.current is not None and c.available > 0 for c in self._teams.values()):
            return
        asked = await reservations.asked_back(self._engine, self._owner)
        for credit in self._teams.values():
            if credit.current is not None and credit.current.ref in asked and not credit.lock.locked():
                self._return(credit)

    async def _renew(self, started: float) -> None:
        if not self._reservations:
            return
        alive = await reservations.renew(self._engine, self._owner, self._lease_until())
        # A reservation swept while this process could not renew it: the sweep returned its money, so it
        # hands out nothing more (its later settlements only charge; see settlement._without_swept_releases).
        for ref, reservation in list(self._reservations.items()):
            if ref in alive or reservation.reserved_at >= started:
                continue
            log.warning("credit reservation %s was swept while this process held it", ref)
            del self._reservations[ref]
            credit = self._teams.get(_holder(reservation.team_id, reservation.key))
            if credit is not None and credit.current is reservation:
                credit.current, credit.available = None, 0
