"""A team's money columns (`teams.balance_micros`, `teams.frozen_micros`): every statement that reads them
under a lock or moves them.

The ledger (`billing.ledger`, `billing.settlement`) calls these in its own open transaction, beside the
ledger entry each move belongs to, so the balance and the entries commit together; nothing here opens a
transaction. Moves are atomic `SET balance = balance + ?` updates (never read-then-write). The tier a top-up
unlocks is `accounts.service.raise_tier_in`.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from modelport.accounts.tables import teams
from modelport.money import MAX_BALANCE_MICROS
from modelport.storage import sqlite_direct

Funds = tuple[int, int]  # (available balance, frozen), in micros, as a statement's RETURNING gave them


def _funds(row: Any) -> Funds | None:
    return None if row is None else (int(row[0]), int(row[1]))


async def move_in(conn: AsyncConnection, team_id: str, balance_delta: int, frozen_delta: int) -> Funds | None:
    """Add the deltas to the team's balance and frozen amount; None: no such team."""
    row = (
        await conn.execute(
            update(teams)
            .where(teams.c.id == team_id)
            .values(
                balance_micros=teams.c.balance_micros + balance_delta,
                frozen_micros=teams.c.frozen_micros + frozen_delta,
            )
            .returning(teams.c.balance_micros, teams.c.frozen_micros)
        )
    ).first()
    return _funds(row)


async def top_up_in(conn: AsyncConnection, team_id: str, micros: int) -> Funds | None:
    """Add `micros` to the balance unless that passes `MAX_BALANCE_MICROS`; None (nothing written): no such
    team, or over the bound. Conditional, so concurrent top-ups cannot together pass the bound either."""
    row = (
        await conn.execute(
            update(teams)
            .where(teams.c.id == team_id, teams.c.balance_micros <= MAX_BALANCE_MICROS - micros)
            .values(balance_micros=teams.c.balance_micros + micros)
            .returning(teams.c.balance_micros, teams.c.frozen_micros)
        )
    ).first()
    return _funds(row)


# A conditional freeze (available -> frozen only if the balance covers it), built once with bound parameters.
_HOLD = (
    update(teams)
    .where(teams.c.id == bindparam("team_id"), teams.c.balance_micros >= bindparam("micros"))
    .values(
        balance_micros=teams.c.balance_micros - bindparam("micros"),
        frozen_micros=teams.c.frozen_micros + bindparam("micros"),
    )
    .returning(teams.c.balance_micros, teams.c.frozen_micros)
)


async def freeze_in(conn: AsyncConnection, team_id: str, micros: int) -> Funds | None:
    """Move `micros` from available to frozen if the available balance covers it; None (nothing written) if not."""
    row = (await conn.execute(_HOLD, {"team_id": team_id, "micros": micros})).first()
    return _funds(row)


# Many teams' moves at once (one parameter set per team: `team_id`, `balance_delta`, `frozen_delta`).
_MOVE = (
    update(teams)
    .where(teams.c.id == bindparam("team_id"))
    .values(
        balance_micros=teams.c.balance_micros + bindparam("balance_delta"),
        frozen_micros=teams.c.frozen_micros + bindparam("frozen_delta"),
    )
)
_SQLITE_MOVE = sqlite_direct.compiled_sql(_MOVE)


async def move_many_in(conn: AsyncConnection, moves: list[dict[str, Any]]) -> None:
    """`move_in` for each parameter set of `moves`, in one executemany; the caller orders them (by team id)."""
    await conn.execute(_MOVE, moves)


def move_many_sqlite(conn: sqlite3.Connection, moves: list[dict[str, Any]]) -> None:
    """`move_many_in` in a plain SQLite connection's transaction (`storage.sqlite_direct`'s thread)."""
    conn.executemany(_SQLITE_MOVE, moves)


def move_sqlite(conn: sqlite3.Connection, team_id: str, balance_delta: int, frozen_delta: int) -> None:
    """One team's move in a plain SQLite connection's transaction."""
    conn.execute(_SQLITE_MOVE, {"team_id": team_id, "balance_delta": balance_delta, "frozen_delta": frozen_delta})


async def balance_for_update(conn: AsyncConnection, team_id: str) -> int | None:
    """The available balance, with the team's row locked until the transaction ends (PostgreSQL: FOR UPDATE;
    SQLite's BEGIN IMMEDIATE already holds the write lock); None: no such team."""
    query = select(teams.c.balance_micros).where(teams.c.id == team_id)
    if conn.dialect.name == "postgresql":
        query = query.with_for_update()
    balance = (await conn.execute(query)).scalar_one_or_none()
    return None if balance is None else int(balance)


_SQLITE_BALANCE = sqlite_direct.compiled_sql(select(teams.c.balance_micros).where(teams.c.id == bindparam("team_id")))


def balance_sqlite(conn: sqlite3.Connection, team_id: str) -> int | None:
    """The available balance in a plain SQLite connection's `BEGIN IMMEDIATE` transaction; None: no such team."""
    row = conn.execute(_SQLITE_BALANCE, {"team_id": team_id}).fetchone()
    return None if row is None else int(row[0])
