"""Both stores, straight: the database (SQLite and PostgreSQL) and Redis keep entries per team, expire them,
evict the least recently used past the size bound (naming the teams evicted), count each team's bytes,
and purge one team without touching another."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from redis.asyncio import Redis

from modelport import metrics
from modelport.response_cache.db_store import DatabaseStore
from modelport.response_cache.redis_store import RedisStore
from modelport.response_cache.store import CacheStore
from tests.support.databases import migrated_engine

REDIS_URL = os.environ.get("MODELPORT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
ENTRY = b"e" * 1000
BOUND = 3500  # three entries fit, a fourth evicts the least recently used


@pytest.fixture(autouse=True)
def _counting() -> Iterator[None]:
    """A process that records metrics: the database store then reports each team's bytes too."""
    metrics.enable(True)
    try:
        yield
    finally:
        metrics.enable(False)


@asynccontextmanager
async def _store(kind: str, tmp_path: Path) -> AsyncIterator[CacheStore]:
    if kind == "redis":
        redis = Redis.from_url(REDIS_URL)
        prefix = "mp-store-" + secrets.token_hex(4)
        try:
            yield RedisStore(redis, prefix, BOUND)
        finally:
            async for name in redis.scan_iter(match=prefix + ":*"):
                await redis.delete(name)
            await redis.aclose()
        return
    async with migrated_engine(kind, tmp_path) as engine:
        yield DatabaseStore(engine, BOUND)


@pytest.mark.parametrize("kind", ["sqlite", "postgres", "redis"])
async def test_a_store_keeps_expires_evicts_and_purges(kind: str, tmp_path: Path) -> None:
    async with _store(kind, tmp_path) as store:
        now = int(time.time() * 1000)  # Redis expires entries by its own clock
        assert (await store.put("team_a", "d1", ENTRY, now + 60_000, now)).evicted == []
        assert (await store.put("team_b", "d1", ENTRY, now + 60_000, now + 2000)).team_bytes == len(ENTRY)
        assert await store.get("team_a", "d1", now + 1) == ENTRY
        assert await store.get("team_b", "d2", now + 1) is None
        assert await store.get("team_c", "d1", now + 1) is None  # another team's digest is not its entry
        # Read at +3000: team_a's entry is now more recent than team_b's.
        assert await store.get("team_a", "d1", now + 3000) == ENTRY
        stored = await store.put("team_a", "d2", ENTRY, now + 60_000, now + 4000)
        assert stored.evicted == [] and stored.team_bytes == 2 * len(ENTRY)
        pushed = await store.put("team_a", "d3", ENTRY, now + 60_000, now + 5000)
        assert pushed.evicted == ["team_b"]  # the least recently used, whoever owned it
        assert await store.get("team_b", "d1", now + 5001) is None
        assert await store.get("team_a", "d1", now + 5001) == ENTRY
        # Replacing an entry does not count it twice.
        assert (await store.put("team_a", "d3", ENTRY, now + 60_000, now + 6000)).team_bytes == 3 * len(ENTRY)
        assert await store.team_bytes("team_a") == 3 * len(ENTRY)
        await store.put("team_b", "d9", ENTRY, now + 60_000, now + 7000)
        assert await store.purge("team_a") == 2
        assert await store.team_bytes("team_a") == 0
        assert await store.get("team_b", "d9", now + 7001) == ENTRY


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_an_expired_entry_is_never_served(kind: str, tmp_path: Path) -> None:
    async with _store(kind, tmp_path) as store:
        if kind == "redis":
            # Redis expires by its own clock: an entry whose end has passed is gone.
            now = int(time.time() * 1000)
            await store.put("team_a", "d1", ENTRY, now - 1, now - 10)
            assert await store.get("team_a", "d1", now) is None
            assert await store.team_bytes("team_a") == 0  # the read forgot it
            return
        now = 1_000_000_000_000
        await store.put("team_a", "d1", ENTRY, now + 1000, now)
        assert await store.get("team_a", "d1", now + 999) == ENTRY
        assert await store.get("team_a", "d1", now + 1000) is None
        # Past the bound, expired rows go before any live one is evicted.
        await store.put("team_a", "d2", ENTRY, now + 60_000, now + 1001)
        await store.put("team_a", "d3", ENTRY, now + 60_000, now + 1002)
        assert (await store.put("team_a", "d4", ENTRY, now + 60_000, now + 1003)).evicted == []
        assert await store.get("team_a", "d2", now + 1004) == ENTRY
