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

import contextlib
import dataclasses
import logging
import sqlite3
from dataclasses import dataclass, field
from typing import Any, Unpack

from sqlalchemy import delete, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts import balances
from modelport.billing import daily, key_budget, notify
from modelport.billing.tables import credit_reservations, ledger_entries, settlement_keys
from modelport.clock import now_ms
from modelport.ids import unique_id
from modelport.services import ServiceKey
from modelport.storage import sqlite_direct
from modelport.storage.batch_writer import BatchWriter, Tuning

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
    key: str = field(default_factory=lambda: unique_id("stl"))
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
    # Settlements are money: never dropped for room. Without a spill dir they all wait in memory.
    default_max_pending = 10_000_000

    def __init__(self, engine: AsyncEngine, **tuning: Unpack[Tuning]) -> None:
        super().__init__(
            engine,
            write_settlements,
            name="settlements",
            to_row=Settlement.as_row,
            from_row=Settlement.from_row,
            **tuning,
        )


def _insert_keys(conn: AsyncConnection) -> Any:
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    return dialect.insert(settlement_keys).on_conflict_do_nothing(index_elements=["key"])


async def write_settlements(engine: AsyncEngine, batch: list[Settlement]) -> int:
    """Apply the settlements of `batch` not applied before, in one transaction; returns how many were new."""
    if not batch:
        return 0
    direct = sqlite_direct.for_engine(engine)
    if direct is not None:
        at = now_ms()
        with contextlib.suppress(_NeedsEngine):
            return await direct.transaction(lambda conn: _write_sqlite(conn, batch, at))
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
    closed = _closed(todo)
    if closed:
        await conn.execute(delete(credit_reservations).where(credit_reservations.c.ref.in_(closed)))
    return len(fresh)


def _closed(todo: list[Settlement]) -> list[str]:
    return sorted({item.release_ref for item in todo if item.closes and item.release_ref})


def _reservation_refs(batch: list[Settlement]) -> set[str]:
    return {item.release_ref for item in batch if item.release_ref and item.release_ref.startswith(RESERVATION_PREFIX)}


async def _without_swept_releases(conn: AsyncConnection, batch: list[Settlement]) -> list[Settlement]:
    # A release from a credit reservation whose row is gone: the sweep (or an earlier close) returned all of
    # it already, so releasing again would free money twice. Only the cost is charged, from the balance.
    refs = _reservation_refs(batch)
    if not refs:
        return batch
    query = select(credit_reservations.c.ref).where(credit_reservations.c.ref.in_(sorted(refs)))
    if conn.dialect.name == "postgresql":  # a sweep of these rows waits for this transaction, or skips them
        query = query.with_for_update(read=True)
    rows = await conn.execute(query)
    return _charge_only_if_gone(batch, refs - {ref for (ref,) in rows.all()})


def _charge_only_if_gone(batch: list[Settlement], gone: set[str]) -> list[Settlement]:
    if not gone:
        return batch
    log.warning("settlements for %d reservations already returned: charged from the balance", len(gone))
    return [
        dataclasses.replace(item, held_micros=0, closes=False) if item.release_ref in gone else item for item in batch
    ]


def _move_params(batch: list[Settlement]) -> list[dict[str, Any]]:
    # The balance moves are additive, so one UPDATE per team (not per settlement) gives the same balances.
    # Teams in id order: concurrent batches (several processes on PostgreSQL) lock rows in one order.
    moves: dict[str, list[int]] = {}
    for item in batch:
        move = moves.setdefault(item.team_id, [0, 0])
        move[0] += item.held_micros - item.cost_micros
        move[1] -= item.held_micros
    return [{"team_id": team, "balance_delta": b, "frozen_delta": f} for team, (b, f) in sorted(moves.items())]


def _entries(batch: list[Settlement], at: int) -> list[dict[str, Any]]:
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
    return entries


def _key_moves(batch: list[Settlement]) -> list[tuple[str, int, int, int]]:
    return [(item.key_id, item.key_period_ms, item.held_micros, item.cost_micros) for item in batch if item.key_id]


def _day_entries(entries: list[dict[str, Any]]) -> list[tuple[str, str, int, int]]:
    return [(str(e["team_id"]), str(e["kind"]), int(e["amount_micros"]), int(e["created_at_ms"])) for e in entries]


async def _apply(conn: AsyncConnection, batch: list[Settlement], at: int) -> None:
    moves = _move_params(batch)
    if moves:
        await balances.move_many_in(conn, moves)
    entries = _entries(batch, at)
    # After the team rows: the lock order every writer keeps is team, then its key.
    await key_budget.settle_in(conn, _key_moves(batch))
    if entries:
        await conn.execute(insert(ledger_entries), entries)
        # After the team rows above: a team's day totals are only locked under its team row's lock.
        await daily.bump(conn, _day_entries(entries))
    # Charges lower balances and key spends: a team's notification thresholds are crossed here, if anywhere.
    charged = [item for item in batch if item.cost_micros]
    await notify.after_settlement(
        conn,
        (item.team_id for item in charged),
        ((item.team_id, item.key_id, item.key_period_ms) for item in charged if item.key_id),
    )


# -- SQLite: the same batch in one hand-off to `storage.sqlite_direct`'s thread ----------------------------


class _NeedsEngine(Exception):
    """A notification may be due: the batch is rolled back and written through the engine instead, whose
    path (`notify.after_settlement`) sends it."""


# The columns of a ledger entry as `_entries` (and `ledger`'s reservations) write it.
ENTRY_COLUMNS = ["team_id", "kind", "amount_micros", "ref", "note", "created_at_ms"]
_SQLITE_INSERT_KEY = sqlite_direct.compiled_sql(
    sqlite.insert(settlement_keys).on_conflict_do_nothing(index_elements=["key"]), ["key", "created_at_ms"]
)
_SQLITE_KEY_SETTLE = sqlite_direct.compiled_sql(key_budget.SETTLE)
SQLITE_ENTRY = sqlite_direct.compiled_sql(insert(ledger_entries), ENTRY_COLUMNS)
_SQLITE_INSERT_KEYS = sqlite_direct.MultiRowInsert(_SQLITE_INSERT_KEY, ["key", "created_at_ms"])
_SQLITE_ENTRIES = sqlite_direct.MultiRowInsert(SQLITE_ENTRY, ENTRY_COLUMNS)
_SQLITE_LIVE_RESERVATIONS = f"SELECT ref FROM credit_reservations WHERE ref {sqlite_direct.IN_JSON_LIST}"
_SQLITE_CLOSE_RESERVATIONS = f"DELETE FROM credit_reservations WHERE ref {sqlite_direct.IN_JSON_LIST}"


def _write_sqlite(conn: sqlite3.Connection, batch: list[Settlement], at: int) -> int:
    """`write_settlements_in`, statement for statement, in `sqlite_direct`'s thread and transaction."""
    keys = [{"key": k, "created_at_ms": at} for k in sorted({item.key for item in batch})]
    conn.execute("SAVEPOINT keys")
    if _SQLITE_INSERT_KEYS.run(conn, keys) == len(keys):
        fresh = {row["key"] for row in keys}
    else:  # some were applied before (a retried batch, a replayed spill file): find which, one by one
        conn.execute("ROLLBACK TO keys")
        fresh = {row["key"] for row in keys if conn.execute(_SQLITE_INSERT_KEY, row).rowcount}
    conn.execute("RELEASE keys")
    todo = [item for item in batch if item.key in fresh]
    refs = _reservation_refs(todo)
    if refs:
        wanted = sqlite_direct.json_list(sorted(refs))
        live = {ref for (ref,) in conn.execute(_SQLITE_LIVE_RESERVATIONS, (wanted,))}
        todo = _charge_only_if_gone(todo, refs - live)
    moves = _move_params(todo)
    if moves:
        balances.move_many_sqlite(conn, moves)
    key_rows = key_budget.settle_params(_key_moves(todo))
    if key_rows:
        conn.executemany(_SQLITE_KEY_SETTLE, key_rows)
    entries = _entries(todo, at)
    if entries:
        _SQLITE_ENTRIES.run(conn, entries)
        conn.executemany(daily.SQLITE_BUMP, daily.bump_params(_day_entries(entries)))
    charged = [item for item in todo if item.cost_micros]
    if notify.sqlite_would_send(
        conn, (item.team_id for item in charged), (item.team_id for item in charged if item.key_id)
    ):
        raise _NeedsEngine
    closed = _closed(todo)
    if closed:
        conn.execute(_SQLITE_CLOSE_RESERVATIONS, (sqlite_direct.json_list(closed),))
    return len(fresh)


# Far longer than any spill file waits for its replay (the next start of a process on that machine).
SETTLEMENT_KEY_RETENTION_MS = 30 * 24 * 3600 * 1000


async def prune_settlement_keys(engine: AsyncEngine, *, older_than_ms: int = SETTLEMENT_KEY_RETENTION_MS) -> int:
    async with engine.begin() as conn:
        result = await conn.execute(
            delete(settlement_keys).where(settlement_keys.c.created_at_ms < now_ms() - older_than_ms)
        )
    return int(result.rowcount or 0)
