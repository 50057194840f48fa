"""The append-only ledger and the team balance it adds up to.

Invariant: for every team, `teams.balance_micros` (the available balance) equals the sum of its
`ledger_entries.amount_micros`. Each operation writes its entries and moves the balance in one
transaction, with atomic `SET balance = balance + ?` updates (never read-then-write), so concurrent
top-ups, reservations and settlements in any number of processes keep the invariant.

Holds move money from available to frozen (a negative `hold` entry: the text gateway's credit
reservations, `reserve`; media tasks use `freeze_in`); a hold ends in `release`s (the money comes back)
and `charge`s (the actual cost), written by `billing.settlement.write_settlements` (the text gateway) or
`settle_in` (media tasks).

The statements on the team's row (`teams` belongs to `accounts`) are `accounts.balances`'s, run here in the
transaction of the entries they go with.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts import balances
from modelport.billing import daily, key_budget, notify, reservations, settlement
from modelport.billing.key_budget import KeyBudgetShort, KeyHold
from modelport.billing.tables import ledger_entries
from modelport.clock import now_ms
from modelport.errors import InvalidParameters, NotFound
from modelport.money import MAX_BALANCE_MICROS, MAX_TOPUP_USD, MICROS_PER_USD, display_usd
from modelport.storage import sqlite_direct


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    id: int
    kind: str
    amount_micros: int
    ref: str | None
    note: str | None
    created_at_ms: int

    def to_public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "amount_usd": display_usd(self.amount_micros),
            "amount_micros": self.amount_micros,
            "ref": self.ref,
            "note": self.note,
            "created_at": self.created_at_ms // 1000,
        }


MAX_PAGE = 1000


async def read_entries(
    engine: AsyncEngine, team_id: str, *, limit: int = 100, before_id: int | None = None
) -> list[LedgerEntry]:
    """The team's entries, newest first; `before_id` pages back (entries with a smaller id), `limit` 1..1000."""
    limit = max(1, min(limit, MAX_PAGE))
    stmt = select(ledger_entries).where(ledger_entries.c.team_id == team_id)
    if before_id is not None:
        stmt = stmt.where(ledger_entries.c.id < before_id)
    stmt = stmt.order_by(ledger_entries.c.id.desc()).limit(limit)
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    return [LedgerEntry(int(r.id), r.kind, int(r.amount_micros), r.ref, r.note, int(r.created_at_ms)) for r in rows]


@dataclass(frozen=True, slots=True)
class BalanceAfter:
    balance_micros: int
    frozen_micros: int


async def _entry(
    conn: AsyncConnection, team_id: str, kind: str, amount: int, ref: str | None, note: str | None = None
) -> None:
    """One entry and its day's total; every caller has already updated (locked) the team's row."""
    at = now_ms()
    await conn.execute(
        insert(ledger_entries).values(
            team_id=team_id, kind=kind, amount_micros=amount, ref=ref, note=note, created_at_ms=at
        )
    )
    await daily.bump(conn, [(team_id, kind, amount, at)])


async def _move(conn: AsyncConnection, team_id: str, balance_delta: int, frozen_delta: int) -> BalanceAfter:
    after = await balances.move_in(conn, team_id, balance_delta, frozen_delta)
    if after is None:
        raise NotFound(f"no team {team_id!r}")
    return BalanceAfter(*after)


async def topup(engine: AsyncEngine, team_id: str, micros: int, *, note: str | None = None) -> BalanceAfter:
    async with engine.begin() as conn:
        return await topup_in(conn, team_id, micros, note=note)


async def topup_in(conn: AsyncConnection, team_id: str, micros: int, *, note: str | None = None) -> BalanceAfter:
    """A top-up inside the caller's transaction (so its audit event commits with it)."""
    if micros <= 0:
        raise InvalidParameters("top-up amount must be positive", param="amount_usd")
    if micros > MAX_TOPUP_USD * MICROS_PER_USD:
        raise InvalidParameters(f"a top-up is at most {MAX_TOPUP_USD} USD", param="amount_usd")
    # Conditional, so concurrent top-ups cannot together pass the bound either.
    row = await balances.top_up_in(conn, team_id, micros)
    if row is None:
        await _move(conn, team_id, 0, 0)  # NotFound for a missing team
        raise InvalidParameters(
            f"a balance is at most {MAX_BALANCE_MICROS // MICROS_PER_USD} USD: this top-up would pass it",
            param="amount_usd",
        )
    await _entry(conn, team_id, "topup", micros, None, note)
    await notify.after_topup(conn, team_id, row[0], row[1])  # arms the balance events again
    return BalanceAfter(*row)


async def ledger_sum(engine: AsyncEngine, team_id: str) -> int:
    async with engine.connect() as conn:
        total = (
            await conn.execute(
                select(func.coalesce(func.sum(ledger_entries.c.amount_micros), 0)).where(
                    ledger_entries.c.team_id == team_id
                )
            )
        ).scalar_one()
    return int(total)


async def reserve(
    engine: AsyncEngine,
    team_id: str,
    *,
    want_micros: int,
    minimum_micros: int,
    ref: str,
    owner: str,
    lease_until_ms: int,
    share_divisor: int = 1,
    key: KeyHold | None = None,
) -> int | None:
    """Freeze up to `want_micros` if at least `minimum_micros` is available: never more than the available
    balance divided by `share_divisor` (a fair part of what is left, so other processes still find money), never less
    than `minimum_micros`. Returns the amount frozen, or None (nothing written) when the balance is short.
    The reservation's lease row (`billing.reservations`) is written in the same transaction.

    Read and write happen under the team row's lock (SQLite: BEGIN IMMEDIATE; PostgreSQL: FOR UPDATE), so
    the amount can depend on the balance without a race.

    With `key` (a key with a spend limit) the same amount is also held against the key's limit, in the same
    transaction (`key_budget.hold_in`); raises KeyBudgetShort (nothing written) when the key's limit cannot
    cover `minimum_micros` though the team's balance can."""
    if minimum_micros < 0 or want_micros < minimum_micros or share_divisor < 1:
        raise InvalidParameters("reserve needs 0 <= minimum <= want and share_divisor >= 1")
    direct = sqlite_direct.for_engine(engine) if key is None else None
    if direct is not None:  # SQLite: the same statements in one hand-off to `storage.sqlite_direct`'s thread
        return await direct.transaction(
            lambda conn: _reserve_sqlite(
                conn, team_id, want_micros, minimum_micros, ref, owner, lease_until_ms, share_divisor
            )
        )
    async with engine.begin() as conn:
        balance = await balances.balance_for_update(conn, team_id)
        if balance is None or balance < minimum_micros:
            return None
        amount = min(want_micros, max(minimum_micros, balance // share_divisor))
        if key is not None:
            held = await key_budget.hold_in(
                conn, key, want_micros=amount, minimum_micros=minimum_micros, share_divisor=share_divisor
            )
            if held is None:
                raise KeyBudgetShort(key.key_id)
            amount = held
        await _move(conn, team_id, -amount, amount)
        await _entry(conn, team_id, "hold", -amount, ref, "credit reservation")
        await reservations.insert_in(
            conn,
            ref=ref,
            team_id=team_id,
            owner=owner,
            amount_micros=amount,
            lease_until_ms=lease_until_ms,
            key=None if key is None else (key.key_id, key.period_ms),
        )
    return amount


def _reserve_sqlite(
    conn: sqlite3.Connection,
    team_id: str,
    want_micros: int,
    minimum_micros: int,
    ref: str,
    owner: str,
    lease_until_ms: int,
    share_divisor: int,
) -> int | None:
    """`reserve` without a key, in a plain SQLite connection's `BEGIN IMMEDIATE` transaction (the team's row
    is under the write lock from the start, as in the engine's)."""
    balance = balances.balance_sqlite(conn, team_id)
    if balance is None or balance < minimum_micros:
        return None
    amount = min(want_micros, max(minimum_micros, balance // share_divisor))
    balances.move_sqlite(conn, team_id, -amount, amount)
    at = now_ms()
    entry = (team_id, "hold", -amount, ref, "credit reservation", at)
    conn.execute(settlement.SQLITE_ENTRY, dict(zip(settlement.ENTRY_COLUMNS, entry, strict=True)))
    conn.executemany(daily.SQLITE_BUMP, daily.bump_params([(team_id, "hold", -amount, at)]))
    reservations.insert_sqlite(
        conn, ref=ref, team_id=team_id, owner=owner, amount_micros=amount, lease_until_ms=lease_until_ms
    )
    return amount


# -- inside a caller's transaction (media tasks: the money moves with the task row's status change) --------


async def freeze_in(conn: AsyncConnection, team_id: str, micros: int, *, ref: str, kind: str) -> BalanceAfter | None:
    """Freeze `micros` (available -> frozen) if the available balance covers it, in the caller's transaction;
    None (nothing written) if it does not. `kind` keeps these entries apart from the text gateway's holds."""
    if micros < 0:
        raise InvalidParameters("a freeze must not be negative")
    row = await balances.freeze_in(conn, team_id, micros)
    if row is None:
        return None
    await _entry(conn, team_id, kind, -micros, ref)
    return BalanceAfter(*row)


async def settle_in(
    conn: AsyncConnection, team_id: str, *, held_micros: int, cost_micros: int, ref: str, release_kind: str
) -> BalanceAfter:
    """End a freeze in the caller's transaction: release all of it and charge `cost_micros`."""
    after = await _move(conn, team_id, held_micros - cost_micros, -held_micros)
    if held_micros:
        await _entry(conn, team_id, release_kind, held_micros, ref)
    if cost_micros:
        await _entry(conn, team_id, "charge", -cost_micros, ref)
    return after
