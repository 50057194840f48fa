"""The stored responses of every team (`tables.stored_responses`): written by the text gateway at the end
of a `POST /v1/responses` with `store` true, read for `previous_response_id` and the retrieval routes, and
removed by `DELETE /v1/responses/{id}` or by the retention pruner once expired (`ExpiredResponses`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from sqlalchemy import and_, bindparam, delete, insert, select
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.clock import now_ms as wall_ms
from modelport.responses_store.items import Stored
from modelport.responses_store.tables import stored_responses as t
from modelport.storage import sqlite_direct

# A chain longer than this is cut at its oldest end (a bound against a chain the client makes endless).
MAX_CHAIN = 1000
PRUNE_BATCH = 500
ID_WIDTH = 200  # the id column's width

# The save's two statements, built once: building `insert(t).values(**row)` and a fresh `delete` per save
# ran ~8,500 Python opcodes in SQLAlchemy's coercions (most of the Responses fast path's extra over Chat's,
# bench/opcount_profile.py); prepared ones take their values as parameters. On a SQLite file the same
# statements, compiled once, run in one hand-off to `storage.sqlite_direct`'s thread (through the async
# engine each statement, BEGIN and COMMIT are hand-offs of their own).
_REPLACE_DELETE = delete(t).where(and_(t.c.team_id == bindparam("old_team_id"), t.c.id == bindparam("old_id")))
_REPLACE_INSERT = insert(t)
_SQLITE_REPLACE_DELETE = sqlite_direct.compiled_sql(_REPLACE_DELETE)
_SQLITE_REPLACE_INSERT = sqlite_direct.compiled_sql(_REPLACE_INSERT, [c.key for c in t.c])


def _replace_sqlite(conn: sqlite3.Connection, row: Mapping[str, Any]) -> None:
    conn.execute(_SQLITE_REPLACE_DELETE, {"old_team_id": row["team_id"], "old_id": row["id"]})
    conn.execute(_SQLITE_REPLACE_INSERT, row)


def usable_id(value: str) -> bool:
    """An id a row can hold (no NUL, which PostgreSQL refuses in a parameter; within the column's width):
    any other is an id no row has."""
    return len(value) <= ID_WIDTH and "\x00" not in value


class ResponseStore:
    def __init__(self, engine: AsyncEngine, lifetime_ms: int, clock: Callable[[], int] = wall_ms) -> None:
        self.engine = engine
        self.lifetime_ms = lifetime_ms
        self._clock = clock

    async def save(
        self, team_id: str, response_id: str, previous_id: str | None, items: list[Any], response: dict[str, Any]
    ) -> None:
        """Keep a response (one with the same id in the team is replaced)."""
        now = self._clock()
        row = {
            "team_id": team_id,
            "id": response_id,
            "previous_id": previous_id,
            "input_items": orjson.dumps(items).decode(),
            "response": orjson.dumps(response).decode(),
            "created_at_ms": now,
            "expires_at_ms": now + self.lifetime_ms,
        }
        direct = sqlite_direct.for_engine(self.engine)
        if direct is not None:
            await direct.transaction(lambda conn: _replace_sqlite(conn, row))
            return
        async with self.engine.begin() as conn:
            await conn.execute(_REPLACE_DELETE, {"old_team_id": team_id, "old_id": response_id})
            await conn.execute(_REPLACE_INSERT, row)

    async def get(self, team_id: str, response_id: str) -> Stored | None:
        """The team's stored response, unless unknown, another team's or expired."""
        if not usable_id(response_id):
            return None
        query = select(t.c.id, t.c.previous_id, t.c.input_items, t.c.response).where(
            and_(t.c.team_id == team_id, t.c.id == response_id, t.c.expires_at_ms > self._clock())
        )
        async with self.engine.connect() as conn:
            row = (await conn.execute(query)).first()
        if row is None:
            return None
        return Stored(row.id, row.previous_id, orjson.loads(row.input_items), orjson.loads(row.response))

    async def chain(self, team_id: str, response_id: str) -> list[Stored] | None:
        """The response and those it follows (through `previous_response_id`), oldest first; None when the
        response itself is not there. An ancestor gone (deleted, expired) ends the chain there."""
        newest = await self.get(team_id, response_id)
        if newest is None:
            return None
        chain = [newest]
        seen = {newest.id}
        while (previous := chain[-1].previous_id) is not None and previous not in seen and len(chain) < MAX_CHAIN:
            stored = await self.get(team_id, previous)
            if stored is None:
                break
            chain.append(stored)
            seen.add(stored.id)
        chain.reverse()
        return chain

    async def delete(self, team_id: str, response_id: str) -> bool:
        """Remove the team's response; False when there was none (or it had expired)."""
        if not usable_id(response_id):
            return False
        now = self._clock()
        async with self.engine.begin() as conn:
            found = await conn.execute(
                delete(t).where(and_(t.c.team_id == team_id, t.c.id == response_id, t.c.expires_at_ms > now))
            )
        return bool(found.rowcount)


class ExpiredResponses:
    """The retention pruner's target for stored responses past their lifetime (`Pruner.register`)."""

    name = "stored_responses"

    async def prune(self, engine: AsyncEngine, now_ms: int) -> dict[str, int]:
        removed = 0
        while True:
            async with engine.begin() as conn:
                ids = (
                    await conn.execute(
                        select(t.c.team_id, t.c.id).where(t.c.expires_at_ms <= now_ms).limit(PRUNE_BATCH)
                    )
                ).all()
                for team_id, response_id in ids:
                    await conn.execute(delete(t).where(and_(t.c.team_id == team_id, t.c.id == response_id)))
            removed += len(ids)
            if len(ids) < PRUNE_BATCH:
                return {"stored_responses": removed}
