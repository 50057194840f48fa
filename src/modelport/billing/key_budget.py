"""A key's spend limit, held like a team's balance: `key_spend` rows moved only by atomic updates.

A key with a spend limit has one row per period (`accounts.limits.period_start_ms`): `spent_micros` (what
was charged) and `frozen_micros` (what credit reservations and media tasks hold against the limit). What
the key may still take is `limit - spent - frozen`. A hold is conditional and made under the row's lock,
in the same transaction as the team's hold (`ledger.reserve` for the text gateway's reservations,
`media.tasks.transitions.TaskTransitions.create` for tasks), so every process together never freezes more than the key
may spend; settlements and sweeps release and charge it in the transaction that moves the team's money.

Lock order: the team's row, then its key's row (every writer), so no two transactions wait on each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts.limits import KeyLimits, period_end_ms, period_start_ms
from modelport.billing.tables import key_spend
from modelport.clock import now_ms
from modelport.money import micros_to_usd


@dataclass(frozen=True, slots=True)
class KeyHold:
    """Where a key's hold goes: its row for the period, and the limit to hold against."""

    key_id: str
    period_ms: int
    limit_micros: int


class KeyBudgetShort(Exception):
    """The key's spend limit cannot cover the hold (the team's balance may still)."""


def key_hold(key_id: str, limits: KeyLimits | None, at_ms: int) -> KeyHold | None:
    """The hold of a request made now with this key; None when the key has no spend limit."""
    if limits is None or limits.spend_limit_micros is None:
        return None
    return KeyHold(key_id, limits.period_start(at_ms), limits.spend_limit_micros)


def _insert(conn: AsyncConnection) -> Any:
    return postgresql.insert(key_spend) if conn.dialect.name == "postgresql" else sqlite.insert(key_spend)


async def hold_in(
    conn: AsyncConnection, hold: KeyHold, *, want_micros: int, minimum_micros: int, share_divisor: int = 1
) -> int | None:
    """Freeze up to `want_micros` of the key's period if at least `minimum_micros` is left under its limit
    (never more than what is left divided by `share_divisor`); the amount, or None (nothing written)."""
    await conn.execute(
        _insert(conn)
        .values(key_id=hold.key_id, period_start_ms=hold.period_ms, spent_micros=0, frozen_micros=0)
        .on_conflict_do_nothing(index_elements=["key_id", "period_start_ms"])
    )
    query = select(key_spend.c.spent_micros, key_spend.c.frozen_micros).where(
        key_spend.c.key_id == hold.key_id, key_spend.c.period_start_ms == hold.period_ms
    )
    if conn.dialect.name == "postgresql":
        query = query.with_for_update()
    row = (await conn.execute(query)).one()
    left = hold.limit_micros - int(row[0]) - int(row[1])
    if left < minimum_micros:
        return None
    amount = min(want_micros, max(minimum_micros, left // share_divisor))
    await conn.execute(
        update(key_spend)
        .where(key_spend.c.key_id == hold.key_id, key_spend.c.period_start_ms == hold.period_ms)
        .values(frozen_micros=key_spend.c.frozen_micros + amount)
    )
    return amount


SETTLE = (
    update(key_spend)
    .where(key_spend.c.key_id == bindparam("k"), key_spend.c.period_start_ms == bindparam("p"))
    .values(
        frozen_micros=key_spend.c.frozen_micros - bindparam("held"),
        spent_micros=key_spend.c.spent_micros + bindparam("cost"),
    )
)


async def settle_in(conn: AsyncConnection, moves: Iterable[tuple[str, int, int, int]]) -> None:
    """Apply (key_id, period_ms, held, cost): release `held` from frozen and count `cost` as spent. One
    update per key period, in key order (concurrent batches lock rows in one order)."""
    rows = settle_params(moves)
    if rows:
        await conn.execute(SETTLE, rows)


def settle_params(moves: Iterable[tuple[str, int, int, int]]) -> list[dict[str, Any]]:
    """`settle_in`'s parameters for `SETTLE`, one per key period in key order."""
    sums: dict[tuple[str, int], list[int]] = {}
    for key_id, period_ms, held, cost in moves:
        total = sums.setdefault((key_id, period_ms), [0, 0])
        total[0] += held
        total[1] += cost
    return [{"k": k, "p": p, "held": h, "cost": c} for (k, p), (h, c) in sorted(sums.items()) if h or c]


@dataclass(frozen=True, slots=True)
class KeySpend:
    period_start_ms: int
    spent_micros: int
    frozen_micros: int


async def current_spend(engine: AsyncEngine, key_id: str, limits: KeyLimits, at_ms: int) -> KeySpend:
    """What the key spent and holds in the period containing `at_ms` (zeros before its first use)."""
    start = period_start_ms(limits.spend_limit_period, at_ms)
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                select(key_spend.c.spent_micros, key_spend.c.frozen_micros).where(
                    key_spend.c.key_id == key_id, key_spend.c.period_start_ms == start
                )
            )
        ).first()
    return KeySpend(start, 0, 0) if row is None else KeySpend(start, int(row[0]), int(row[1]))


async def key_spend_view(engine: AsyncEngine, key_id: str, limits: KeyLimits | None) -> dict[str, Any] | None:
    """The key's spend in its current period against its limit (None: no spend limit): what the key
    validation endpoint and the consoles show."""
    if limits is None or limits.spend_limit_micros is None:
        return None
    now = now_ms()
    spend = await current_spend(engine, key_id, limits, now)
    end = period_end_ms(limits.spend_limit_period, spend.period_start_ms)
    left = max(0, limits.spend_limit_micros - spend.spent_micros - spend.frozen_micros)
    return {
        "period": limits.spend_limit_period,
        "period_start": spend.period_start_ms // 1000,
        "period_end": None if end is None else end // 1000,
        "limit_usd": micros_to_usd(limits.spend_limit_micros),
        "spent_usd": micros_to_usd(spend.spent_micros),
        "frozen_usd": micros_to_usd(spend.frozen_micros),
        "remaining_usd": micros_to_usd(left),
    }
