"""A team's statement: ledger entries page by page, and totals per kind over a period."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.billing import daily
from modelport.billing.tables import ledger_entries

c = ledger_entries.c

# What each kind of entry means to a team, in the order the statement lists them.
KIND_LABELS = {
    "topup": "Top-ups",
    "charge": "Charges",
    "hold": "Holds (text requests in flight)",
    "release": "Releases (unused holds returned)",
    "task_hold": "Holds (media tasks)",
    "task_release": "Releases (media tasks)",
    "adjust": "Adjustments",
}


# One entry of each kind, as a ledger line says it.
KIND_NAMES = {
    "topup": "Top-up",
    "charge": "Charge",
    "hold": "Hold (text requests)",
    "release": "Release",
    "task_hold": "Hold (media task)",
    "task_release": "Release (media task)",
    "adjust": "Adjustment",
}


@dataclass(frozen=True, slots=True)
class Entry:
    id: int
    kind: str
    amount_micros: int
    ref: str | None
    note: str | None
    created_at_ms: int


async def entries(engine: AsyncEngine, team_id: str, *, before_id: int | None, limit: int) -> Sequence[Entry]:
    """Newest first, older than `before_id` (the last entry of the previous page)."""
    conds = [c.team_id == team_id]
    if before_id is not None:
        conds.append(c.id < before_id)
    stmt = (
        select(c.id, c.kind, c.amount_micros, c.ref, c.note, c.created_at_ms)
        .where(*conds)
        .order_by(c.id.desc())
        .limit(limit)
    )
    async with engine.connect() as conn:
        rows = (await conn.execute(stmt)).all()
    return [Entry(int(r.id), r.kind, int(r.amount_micros), r.ref, r.note, int(r.created_at_ms)) for r in rows]


async def totals(engine: AsyncEngine, team_id: str, *, first_day: int, last_day: int) -> dict[str, tuple[int, int]]:
    """kind -> (entries, sum of amounts) over UTC days first_day..last_day, from the day totals."""
    return await daily.totals(engine, team_id, first_day, last_day)
