"""The conversations of every team (`tables.conversations`, `tables.conversation_items`): made and read by
the `/v1/conversations` routes, continued by a `POST /v1/responses` that names one (its earlier items go
before the input; its input and output items are added once answered), removed by `DELETE` or by the
retention pruner once unused for the store lifetime (`ExpiredConversations`)."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import and_, delete, false, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.clock import now_ms as wall_ms
from modelport.responses_store.store import usable_id
from modelport.responses_store.tables import conversation_items as it
from modelport.responses_store.tables import conversations as ct

PRUNE_BATCH = 200
NewItemId = Callable[[dict[str, Any]], str]


@dataclass(frozen=True, slots=True)
class Conversation:
    id: str
    created_at_ms: int
    metadata: dict[str, Any]


class ConversationStore:
    def __init__(self, engine: AsyncEngine, lifetime_ms: int, clock: Callable[[], int] = wall_ms) -> None:
        self.engine = engine
        self.lifetime_ms = lifetime_ms
        self._clock = clock

    async def create(
        self, team_id: str, metadata: dict[str, Any], items: Sequence[dict[str, Any]], new_item_id: NewItemId
    ) -> Conversation:
        now = self._clock()
        conversation = Conversation("conv_" + secrets.token_hex(24), now, metadata)
        row = {
            "team_id": team_id,
            "id": conversation.id,
            "metadata": orjson.dumps(metadata).decode(),
            "next_position": 0,
            "created_at_ms": now,
            "expires_at_ms": now + self.lifetime_ms,
        }
        async with self.engine.begin() as conn:
            await conn.execute(insert(ct).values(**row))
            if items:
                await self._append(conn, team_id, conversation.id, items, new_item_id)
        return conversation

    async def get(self, team_id: str, conversation_id: str) -> Conversation | None:
        """The team's conversation, unless unknown, another team's or unused past its lifetime."""
        async with self.engine.connect() as conn:
            return await self._get(conn, team_id, conversation_id)

    async def set_metadata(self, team_id: str, conversation_id: str, metadata: dict[str, Any]) -> Conversation | None:
        async with self.engine.begin() as conn:
            found = await conn.execute(
                update(ct)
                .where(self._live(team_id, conversation_id))
                .values(metadata=orjson.dumps(metadata).decode(), expires_at_ms=self._clock() + self.lifetime_ms)
            )
            return await self._get(conn, team_id, conversation_id) if found.rowcount else None

    async def delete(self, team_id: str, conversation_id: str) -> bool:
        async with self.engine.begin() as conn:
            found = await conn.execute(delete(ct).where(self._live(team_id, conversation_id)))
            if not found.rowcount:
                return False
            await conn.execute(delete(it).where(_items_of(team_id, conversation_id)))
        return True

    async def items(self, team_id: str, conversation_id: str, *, touch: bool = False) -> list[dict[str, Any]] | None:
        """Every item, oldest first (None: no such conversation); `touch` counts it as used."""
        async with self.engine.begin() as conn:
            if touch:
                found = await conn.execute(
                    update(ct)
                    .where(self._live(team_id, conversation_id))
                    .values(expires_at_ms=self._clock() + self.lifetime_ms)
                )
                if not found.rowcount:
                    return None
            elif await self._get(conn, team_id, conversation_id) is None:
                return None
            rows = await conn.execute(
                select(it.c.item).where(_items_of(team_id, conversation_id)).order_by(it.c.position)
            )
            return [orjson.loads(row.item) for row in rows]

    async def item(self, team_id: str, conversation_id: str, item_id: str) -> dict[str, Any] | None:
        async with self.engine.connect() as conn:
            if await self._get(conn, team_id, conversation_id) is None:
                return None
            if not usable_id(item_id):
                return None
            row = (
                await conn.execute(
                    select(it.c.item).where(and_(_items_of(team_id, conversation_id), it.c.id == item_id)).limit(1)
                )
            ).first()
        return None if row is None else dict(orjson.loads(row.item))

    async def delete_item(self, team_id: str, conversation_id: str, item_id: str) -> bool:
        async with self.engine.begin() as conn:
            if await self._get(conn, team_id, conversation_id) is None or not usable_id(item_id):
                return False
            found = await conn.execute(delete(it).where(and_(_items_of(team_id, conversation_id), it.c.id == item_id)))
        return bool(found.rowcount)

    async def append(
        self,
        team_id: str,
        conversation_id: str,
        items: Sequence[dict[str, Any]],
        new_item_id: NewItemId,
    ) -> list[dict[str, Any]] | None:
        """Add items after the last (each keeps its `id` unless it has none or the conversation has it
        already: then it gets `new_item_id(item)`), the conversation counted as used; the items as added, or
        None when there is no such conversation."""
        async with self.engine.begin() as conn:
            return await self._append(conn, team_id, conversation_id, items, new_item_id)

    async def _append(
        self,
        conn: AsyncConnection,
        team_id: str,
        conversation_id: str,
        items: Sequence[dict[str, Any]],
        new_item_id: NewItemId,
    ) -> list[dict[str, Any]] | None:
        # The counter moves first: on PostgreSQL that locks the row, so concurrent turns take distinct places.
        moved = await conn.execute(
            update(ct)
            .where(self._live(team_id, conversation_id))
            .values(next_position=ct.c.next_position + len(items), expires_at_ms=self._clock() + self.lifetime_ms)
            .returning(ct.c.next_position)
        )
        end = moved.scalar()
        if end is None:
            return None
        taken = set((await conn.execute(select(it.c.id).where(_items_of(team_id, conversation_id)))).scalars().all())
        added: list[dict[str, Any]] = []
        for item in items:
            item_id = item.get("id")
            if not isinstance(item_id, str) or not usable_id(item_id) or item_id in taken:
                item_id = new_item_id(item)
            taken.add(item_id)
            added.append({**item, "id": item_id})
        start = end - len(items)
        if added:
            await conn.execute(
                insert(it),
                [
                    {
                        "team_id": team_id,
                        "conversation_id": conversation_id,
                        "position": start + i,
                        "id": item["id"],
                        "item": orjson.dumps(item).decode(),
                    }
                    for i, item in enumerate(added)
                ],
            )
        return added

    async def _get(self, conn: AsyncConnection, team_id: str, conversation_id: str) -> Conversation | None:
        row = (
            await conn.execute(
                select(ct.c.id, ct.c.created_at_ms, ct.c.metadata).where(self._live(team_id, conversation_id))
            )
        ).first()
        return None if row is None else Conversation(row.id, row.created_at_ms, orjson.loads(row.metadata))

    def _live(self, team_id: str, conversation_id: str) -> Any:
        if not usable_id(conversation_id):  # no row has it; PostgreSQL refuses a NUL in a parameter
            return false()
        return and_(ct.c.team_id == team_id, ct.c.id == conversation_id, ct.c.expires_at_ms > self._clock())


def _items_of(team_id: str, conversation_id: str) -> Any:
    return and_(it.c.team_id == team_id, it.c.conversation_id == conversation_id)


class ExpiredConversations:
    """The retention pruner's target for conversations unused past their lifetime, with their items."""

    name = "conversations"

    async def prune(self, engine: AsyncEngine, now_ms: int) -> dict[str, int]:
        removed = items = 0
        while True:
            async with engine.begin() as conn:
                ids = (
                    await conn.execute(
                        select(ct.c.team_id, ct.c.id).where(ct.c.expires_at_ms <= now_ms).limit(PRUNE_BATCH)
                    )
                ).all()
                for team_id, conversation_id in ids:
                    gone = await conn.execute(delete(it).where(_items_of(team_id, conversation_id)))
                    items += gone.rowcount or 0
                    await conn.execute(delete(ct).where(and_(ct.c.team_id == team_id, ct.c.id == conversation_id)))
            removed += len(ids)
            if len(ids) < PRUNE_BATCH:
                return {"conversations": removed, "conversation_items": items}
