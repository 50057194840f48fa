"""The response cache in the local database (no Redis configured): one row per entry, shared by every
process on that database. Bounded by size: after a store the least recently served rows go until the
whole table fits; expired rows go first, and a read never serves one."""

from __future__ import annotations

from sqlalchemy import and_, delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.metrics import enabled as metrics_enabled
from modelport.response_cache.store import Stored
from modelport.response_cache.tables import response_cache_entries as t

# A hit moves an entry up the recency order at most this often (not one write per hit).
TOUCH_EVERY_MS = 1000
_EVICT_BATCH = 100


class DatabaseStore:
    shared = False

    def __init__(self, engine: AsyncEngine, max_bytes: int) -> None:
        self._engine = engine
        self._max_bytes = max_bytes

    async def get(self, team_id: str, digest: str, now_ms: int) -> bytes | None:
        where = and_(t.c.team_id == team_id, t.c.digest == digest)
        async with self._engine.connect() as conn:
            row = (await conn.execute(select(t.c.entry, t.c.expires_at_ms, t.c.used_at_ms).where(where))).first()
        if row is None or row.expires_at_ms <= now_ms:
            return None
        if now_ms - row.used_at_ms >= TOUCH_EVERY_MS:
            async with self._engine.begin() as conn:
                await conn.execute(update(t).where(where).values(used_at_ms=now_ms))
        return bytes(row.entry)

    async def put(self, team_id: str, digest: str, value: bytes, expires_at_ms: int, now_ms: int) -> Stored:
        evicted: list[str] = []
        async with self._engine.begin() as conn:
            await conn.execute(delete(t).where(and_(t.c.team_id == team_id, t.c.digest == digest)))
            row = {
                "team_id": team_id,
                "digest": digest,
                "entry": value,
                "size_bytes": len(value),
                "expires_at_ms": expires_at_ms,
                "used_at_ms": now_ms,
            }
            await conn.execute(insert(t).values(**row))
            total = int((await conn.execute(select(func.coalesce(func.sum(t.c.size_bytes), 0)))).scalar_one())
            if total > self._max_bytes:  # expired rows go first, then the least recently served
                expired = await conn.execute(delete(t).where(t.c.expires_at_ms <= now_ms).returning(t.c.size_bytes))
                total -= sum(int(size) for (size,) in expired.all())
            while total > self._max_bytes:
                oldest = (
                    await conn.execute(
                        select(t.c.team_id, t.c.digest, t.c.size_bytes)
                        .order_by(t.c.used_at_ms, t.c.team_id, t.c.digest)
                        .limit(_EVICT_BATCH)
                    )
                ).all()
                if not oldest:
                    break
                for victim in oldest:
                    if total <= self._max_bytes:
                        break
                    await conn.execute(
                        delete(t).where(and_(t.c.team_id == victim.team_id, t.c.digest == victim.digest))
                    )
                    total -= int(victim.size_bytes)
                    evicted.append(victim.team_id)
            # Only a process that records metrics shows it (one more query per store otherwise).
            team_bytes = await self._team_bytes(conn, team_id) if metrics_enabled() else 0
        return Stored(evicted=evicted, team_bytes=team_bytes)

    async def purge(self, team_id: str) -> int:
        async with self._engine.begin() as conn:
            result = await conn.execute(delete(t).where(t.c.team_id == team_id))
        return int(result.rowcount or 0)

    async def team_bytes(self, team_id: str) -> int:
        async with self._engine.connect() as conn:
            return await self._team_bytes(conn, team_id)

    @staticmethod
    async def _team_bytes(conn: AsyncConnection, team_id: str) -> int:
        query = select(func.coalesce(func.sum(t.c.size_bytes), 0)).where(t.c.team_id == team_id)
        return int((await conn.execute(query)).scalar_one())

    async def aclose(self) -> None:
        pass
