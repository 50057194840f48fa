"""Per-team, per-UTC-day, per-kind totals of the ledger (`ledger_daily`), kept with every entry.

Every ledger insert (`ledger._entry`, the settlement writer's batch) bumps its day's row in the same
transaction, so the billing page's totals over a period read a few rows, not a million entries. The
bump always comes after the transaction has updated (and so locked) the team's row, so the day rows of
a team are only ever locked under its team row's lock: no new lock order, no deadlock.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.billing.tables import ledger_daily
from modelport.storage.sqlite_direct import compiled_sql

DAY_MS = 86_400_000


def _insert(conn: AsyncConnection) -> Any:
    return postgresql.insert(ledger_daily) if conn.dialect.name == "postgresql" else sqlite.insert(ledger_daily)


async def bump(conn: AsyncConnection, entries: Iterable[tuple[str, str, int, int]]) -> None:
    """Add entries (team_id, kind, amount_micros, created_at_ms) to their days' totals."""
    params = bump_params(entries)
    if params:
        await conn.execute(upsert(_insert(conn)), params)


def bump_params(entries: Iterable[tuple[str, str, int, int]]) -> list[dict[str, Any]]:
    """`bump`'s parameters for `upsert`: one per (team, day, kind), in that order."""
    sums: dict[tuple[str, int, str], list[int]] = defaultdict(lambda: [0, 0])
    for team_id, kind, amount, at in entries:
        acc = sums[(team_id, at // DAY_MS, kind)]
        acc[0] += 1
        acc[1] += amount
    return [
        {"team_id": t, "day": d, "kind": k, "entries": n, "amount_micros": a}
        for (t, d, k), (n, a) in sorted(sums.items())
    ]


def upsert(insert: Any) -> Any:
    """The dialect's `insert(ledger_daily)` as the add-to-the-day's-row upsert `bump` sends."""
    return insert.on_conflict_do_update(
        index_elements=["team_id", "day", "kind"],
        set_={
            "entries": ledger_daily.c.entries + insert.excluded.entries,
            "amount_micros": ledger_daily.c.amount_micros + insert.excluded.amount_micros,
        },
    )


async def totals(engine: AsyncEngine, team_id: str, first_day: int, last_day: int) -> dict[str, tuple[int, int]]:
    """kind -> (entries, amount) over first_day..last_day (UTC days)."""
    c = ledger_daily.c
    stmt = select(c.kind, c.entries, c.amount_micros).where(c.team_id == team_id, c.day >= first_day, c.day <= last_day)
    async with engine.connect() as conn:
        rows: Sequence[Any] = (await conn.execute(stmt)).all()
    out: dict[str, tuple[int, int]] = {}
    for kind, n, amount in rows:
        prev = out.get(kind, (0, 0))
        out[kind] = (prev[0] + int(n), prev[1] + int(amount))
    return out


async def per_day(engine: AsyncEngine, team_id: str, kind: str, first_day: int, last_day: int) -> dict[int, int]:
    """day -> amount of one kind of entry (e.g. `charge`: everything the team was charged that day)."""
    c = ledger_daily.c
    stmt = select(c.day, c.amount_micros).where(
        c.team_id == team_id, c.kind == kind, c.day >= first_day, c.day <= last_day
    )
    async with engine.connect() as conn:
        rows: Sequence[Any] = (await conn.execute(stmt)).all()
    return {int(day): int(amount) for day, amount in rows}


# `bump` on `storage.sqlite_direct`'s connection: `executemany(SQLITE_BUMP, bump_params(entries))`.
SQLITE_BUMP = compiled_sql(upsert(sqlite.insert(ledger_daily)), ["team_id", "day", "kind", "entries", "amount_micros"])
