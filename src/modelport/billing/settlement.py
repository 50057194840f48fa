"""Settling holds off the hot path: a `BatchWriter` of settlements, each applied to the ledger exactly once.

A request's admission is exact and in memory (`billing.credit`); its settlement (release the held part,
charge the actual cost) is submitted here and written within `flush_interval` seconds, many per
transaction. Like the request log, settlements back off while the database is away, spill to
`DATA_DIR/spill/settlements/` and are replayed (by this process once the database is back, else by the
next one to start), and are drained at shutdown. Each settlement carries a key recorded in
`settlement_keys` in the same transaction as its ledger entries, so a retried batch or a replayed file
never applies one twice.

Crash bound: a hard kill loses the settlements still in memory (the last `flush_interval` seconds); their
reservations then stay frozen until their lease expires and a sweep (`billing.reservations`) returns what
each still has outstanding, charging nothing, since their usage is unknown. A settlement that arrives after
its reservation was swept (a spill replayed late, a process that lost its lease while alive) releases
nothing more: the sweep already returned the money, so only its cost is charged, from the balance.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import bindparam, delete, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.billing import daily, key_budget, notify
from modelport.clock import now_ms
from modelport.ids import new_id
from modelport.services import ServiceKey
from modelport.storage.batch_writer import BatchWriter
from modelport.storage.tables import credit_reservations, ledger_entries, settlement_keys, teams

log = logging.getLogger("modelport.billing")
SETTLEMENTS: ServiceKey[SettlementWriter] = ServiceKey("settlements")
# Ids of credit reservations (`billing.credit`) start with this.
RESERVATION_PREFIX = "rsv_"


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
    # The last settlement of a credit reservation (`release_ref`): its lease row goes in the same transaction.
    closes: bool = False
    # Makes the write idempotent: a settlement whose key is in `settlement_keys` was applied already.
    key: str = field(default_factory=lambda: new_id("stl"))
    # An API key with a spend limit whose period (`key_spend`) the held money was also frozen in: the same
    # release and charge move its row (`billing.key_budget`).
    key_id: str | None = None
    key_period_ms: int = 0

    def as_row(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Settlement:
        return cls(**row)


class SettlementWriter(BatchWriter[Settlement]):
    def __init__(
        self,
        engine: AsyncEngine,
        *,
        flush_interval: float = 0.2,
        max_batch: int = 500,
        spill_dir: Path | None = None,
        close_timeout: float = 10.0,
        retry_initial: float = 0.1,
        retry_max: float = 5.0,
    ) -> None:
        super().__init__(
            engine,
            lambda batch: write_settlements(engine, batch),
            name="settlements",
            to_row=Settlement.as_row,
            from_row=Settlement.from_row,
            max_batch=max_batch,
            flush_interval=flush_interval,
            # Settlements are money: never dropped for room. Without a spill dir they all wait in memory.
            max_pending=10_000_000,
            spill_dir=spill_dir,
            close_timeout=close_timeout,
            retry_initial=retry_initial,
            retry_max=retry_max,
        )


_MOVE = (
    update(teams)
    .where(teams.c.id == bindparam("team_id"))
    .values(
        balance_micros=teams.c.balance_micros + bindparam("balance_delta"),
        frozen_micros=teams.c.frozen_micros + bindparam("frozen_delta"),
    )
)


def _insert_keys(conn: AsyncConnection) -> Any:
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    return dialect.insert(settlement_keys).on_conflict_do_nothing(index_elements=["key"])


async def write_settlements(engine: AsyncEngine, batch: list[Settlement]) -> int:
    """Apply the settlements of `batch` not applied before, in one transaction; returns how many were new."""
    if not batch:
        return 0
    async with engine.begin() as conn:
        return await write_settlements_in(conn, batch)


async def write_settlements_in(conn: AsyncConnection, batch: list[Settlement]) -> int:
    """`write_settlements` inside the caller's transaction."""
    at = now_ms()
    keys = sorted({item.key for item in batch})
    result = await conn.execute(
        _insert_keys(conn).returning(settlement_keys.c.key), [{"key": k, "created_at_ms": at} for k in keys]
    )
    fresh = {key for (key,) in result.all()}
    todo = await _without_swept_releases(conn, [item for item in batch if item.key in fresh])
    await _apply(conn, todo, at)
    closed = sorted({item.release_ref for item in todo if item.closes and item.release_ref})
    if closed:
        await conn.execute(delete(credit_reservations).where(credit_reservations.c.ref.in_(closed)))
    return len(fresh)


async def _without_swept_releases(conn: AsyncConnection, batch: list[Settlement]) -> list[Settlement]:
    # A release from a credit reservation whose row is gone: the sweep (or an earlier close) returned all of
    # it already, so releasing again would free money twice. Only the cost is charged, from the balance.
    refs = {item.release_ref for item in batch if item.release_ref and item.release_ref.startswith(RESERVATION_PREFIX)}
    if not refs:
        return batch
    query = select(credit_reservations.c.ref).where(credit_reservations.c.ref.in_(sorted(refs)))
    if conn.dialect.name == "postgresql":  # a sweep of these rows waits for this transaction, or skips them
        query = query.with_for_update(read=True)
    rows = await conn.execute(query)
    live = {ref for (ref,) in rows.all()}
    gone = refs - live
    if not gone:
        return batch
    log.warning("settlements for %d reservations already returned: charged from the balance", len(gone))
    return [
        dataclasses.replace(item, held_micros=0, closes=False) if item.release_ref in gone else item for item in batch
    ]


async def _apply(conn: AsyncConnection, batch: list[Settlement], at: int) -> None:
    # The balance moves are additive, so one UPDATE per team (not per settlement) gives the same balances.
    # Teams in id order: concurrent batches (several processes on PostgreSQL) lock rows in one order.
    moves: dict[str, list[int]] = {}
    for item in batch:
        move = moves.setdefault(item.team_id, [0, 0])
        move[0] += item.held_micros - item.cost_micros
        move[1] -= item.held_micros
    if moves:
        rows = [{"team_id": team, "balance_delta": b, "frozen_delta": f} for team, (b, f) in sorted(moves.items())]
        await conn.execute(_MOVE, rows)
    entries: list[dict[str, Any]] = []
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
    # After the team rows: the lock order every writer keeps is team, then its key.
    await key_budget.settle_in(
        conn,
        ((item.key_id, item.key_period_ms, item.held_micros, item.cost_micros) for item in batch if item.key_id),
    )
    if entries:
        await conn.execute(insert(ledger_entries), entries)
        # After the team rows above: a team's day totals are only locked under its team row's lock.
        await daily.bump(
            conn,
            [(str(e["team_id"]), str(e["kind"]), int(e["amount_micros"]), int(e["created_at_ms"])) for e in entries],
        )
    # Charges lower balances and key spends: a team's notification thresholds are crossed here, if anywhere.
    charged = [item for item in batch if item.cost_micros]
    await notify.after_settlement(
        conn,
        (item.team_id for item in charged),
        ((item.team_id, item.key_id, item.key_period_ms) for item in charged if item.key_id),
    )


# Far longer than any spill file waits for its replay (the next start of a process on that machine).
SETTLEMENT_KEY_RETENTION_MS = 30 * 24 * 3600 * 1000


async def prune_settlement_keys(engine: AsyncEngine, *, older_than_ms: int = SETTLEMENT_KEY_RETENTION_MS) -> int:
    async with engine.begin() as conn:
        result = await conn.execute(
            delete(settlement_keys).where(settlement_keys.c.created_at_ms < now_ms() - older_than_ms)
        )
    return int(result.rowcount or 0)
