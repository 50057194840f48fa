"""The lease rows of credit reservations (`billing.credit`): create, renew, ask back, sweep.

Each reservation (a `hold` ledger entry whose ref is the reservation's id) has a row naming the process that
owns it and a lease that process renews while it lives. `sweep` — run periodically by every process, and
safe when several run at once — returns what a reservation with an expired lease still holds (its amount
less the releases with its ref), charging nothing, and deletes the row in the same transaction. The sweep
reads this table by its lease index, never the ledger's history.

Concurrency: on PostgreSQL the sweep locks the rows it takes (`FOR UPDATE SKIP LOCKED`, so concurrent sweeps
split the work) and a settlement share-locks the rows it releases into (`settlement._without_swept_releases`),
so a release and a sweep of one reservation never overlap; SQLite serialises writers. Each swept
reservation's settlement has a fixed key, so it is applied once whatever happens.
"""

from __future__ import annotations

import logging
import sqlite3

from sqlalchemy import and_, bindparam, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.billing.settlement import Settlement, write_settlements_in
from modelport.billing.tables import credit_reservations, ledger_entries
from modelport.clock import now_ms
from modelport.storage import sqlite_direct
from modelport.storage.sqlite_direct import compiled_sql

log = logging.getLogger("modelport.billing.reservations")


async def insert_in(
    conn: AsyncConnection,
    *,
    ref: str,
    team_id: str,
    owner: str,
    amount_micros: int,
    lease_until_ms: int,
    key: tuple[str, int] | None = None,
) -> None:
    """`key`: (key id, period start) when the reservation also holds its amount against a key's limit."""
    await conn.execute(
        insert(credit_reservations).values(
            ref=ref,
            team_id=team_id,
            owner=owner,
            amount_micros=amount_micros,
            lease_until_ms=lease_until_ms,
            wanted=False,
            created_at_ms=now_ms(),
            key_id=None if key is None else key[0],
            key_period_ms=None if key is None else key[1],
        )
    )


# `insert_in` on `storage.sqlite_direct`'s connection (`ledger.reserve` without a key, on SQLite).
SQLITE_INSERT = compiled_sql(
    insert(credit_reservations),
    [
        "ref",
        "team_id",
        "owner",
        "amount_micros",
        "lease_until_ms",
        "wanted",
        "created_at_ms",
        "key_id",
        "key_period_ms",
    ],
)


def insert_sqlite(
    conn: sqlite3.Connection, *, ref: str, team_id: str, owner: str, amount_micros: int, lease_until_ms: int
) -> None:
    """`insert_in` (no key) in a plain SQLite connection's transaction."""
    conn.execute(
        SQLITE_INSERT,
        {
            "ref": ref,
            "team_id": team_id,
            "owner": owner,
            "amount_micros": amount_micros,
            "lease_until_ms": lease_until_ms,
            "wanted": False,
            "created_at_ms": now_ms(),
            "key_id": None,
            "key_period_ms": None,
        },
    )


async def renew(engine: AsyncEngine, owner: str, lease_until_ms: int) -> set[str]:
    """Extend the lease of every reservation `owner` has; the refs that still exist (a sweep may have taken
    some, if this process could not renew in time)."""
    async with engine.begin() as conn:
        rows = await conn.execute(
            update(credit_reservations)
            .where(credit_reservations.c.owner == owner)
            .values(lease_until_ms=lease_until_ms)
            .returning(credit_reservations.c.ref)
        )
        return {ref for (ref,) in rows.all()}


async def ask_back(engine: AsyncEngine, team_id: str, owner: str, *, key_id: str | None = None) -> int:
    """Another process could not admit this team (or, with `key_id`, this key's spend limit): ask the other
    owners of its reservations to return what they hold unused. How many reservations were asked (0: nobody
    else holds anything for the team or key)."""
    holder = credit_reservations.c.team_id == team_id if key_id is None else credit_reservations.c.key_id == key_id
    async with engine.begin() as conn:
        result = await conn.execute(
            update(credit_reservations).where(holder, credit_reservations.c.owner != owner).values(wanted=True)
        )
        return int(result.rowcount or 0)


_SQLITE_ASKED_BACK = sqlite_direct.compiled_sql(
    select(credit_reservations.c.ref).where(
        and_(credit_reservations.c.owner == bindparam("owner"), credit_reservations.c.wanted.is_(True))
    )
)


async def asked_back(engine: AsyncEngine, owner: str) -> set[str]:
    """The refs of `owner`'s reservations another process asked back."""
    direct = sqlite_direct.for_engine(engine)
    if direct is not None:  # polled every TICK_SECONDS: on SQLite one hand-off instead of the engine's five
        return await direct.read(lambda conn: {ref for (ref,) in conn.execute(_SQLITE_ASKED_BACK, {"owner": owner})})
    async with engine.connect() as conn:
        rows = await conn.execute(
            select(credit_reservations.c.ref).where(
                and_(credit_reservations.c.owner == owner, credit_reservations.c.wanted.is_(True))
            )
        )
        return {ref for (ref,) in rows.all()}


async def sweep(engine: AsyncEngine, *, limit: int = 200) -> int:
    """Return what reservations with an expired lease still hold; how many were swept."""
    swept = 0
    while True:
        async with engine.begin() as conn:
            query = (
                select(
                    credit_reservations.c.ref,
                    credit_reservations.c.team_id,
                    credit_reservations.c.amount_micros,
                    credit_reservations.c.key_id,
                    credit_reservations.c.key_period_ms,
                )
                .where(credit_reservations.c.lease_until_ms < now_ms())
                .order_by(credit_reservations.c.lease_until_ms)
                .limit(limit)
            )
            if conn.dialect.name == "postgresql":
                query = query.with_for_update(skip_locked=True)
            expired = (await conn.execute(query)).all()
            if not expired:
                return swept
            refs = [row.ref for row in expired]
            sums = await conn.execute(
                select(ledger_entries.c.ref, func.sum(ledger_entries.c.amount_micros))
                .where(ledger_entries.c.kind == "release", ledger_entries.c.ref.in_(refs))
                .group_by(ledger_entries.c.ref)
            )
            released = {ref: int(total or 0) for ref, total in sums.all()}
            batch = [
                Settlement(
                    row.team_id,
                    max(int(row.amount_micros) - released.get(row.ref, 0), 0),
                    0,
                    row.ref,
                    release_ref=row.ref,
                    closes=True,
                    key=f"swp_{row.ref}"[:40],
                    key_id=row.key_id,
                    key_period_ms=int(row.key_period_ms or 0),
                )
                for row in expired
            ]
            await write_settlements_in(conn, batch)
        left = sum(item.held_micros for item in batch)
        log.warning("returned %d micro-USD held by %d reservations whose owner stopped", left, len(batch))
        swept += len(batch)
        if len(expired) < limit:
            return swept
