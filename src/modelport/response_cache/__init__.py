"""The exact response cache (issue 40, docs/api/cache.md): a team that turns it on (`cache`: `team` or
`key`) gets a repeated request's answer from the cache, in its own protocol, streamed or not, at a share
of the original cost. Entries are per team (and per key in `key` mode) by construction: the team is part
of every store key. Redis when configured (shared by every process), else the local database."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.response_cache.db_store import DatabaseStore
from modelport.response_cache.service import RESPONSE_CACHE, Plan, ResponseCache, Result
from modelport.response_cache.store import CacheStore
from modelport.settings import Settings

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["RESPONSE_CACHE", "Plan", "ResponseCache", "Result", "make_cache", "make_store"]


def make_store(settings: Settings, engine: AsyncEngine, redis: Redis | None) -> CacheStore:
    max_bytes = settings.cache.max_bytes
    if redis is not None:
        # Imported here: redis-py is loaded only by a process that has Redis (tests/integration/ops/
        # test_startup_footprint.py).
        from modelport.response_cache.redis_store import RedisStore

        return RedisStore(redis, settings.redis_prefix, max_bytes)
    return DatabaseStore(engine, max_bytes)


def make_cache(settings: Settings, engine: AsyncEngine, redis: Redis | None) -> ResponseCache:
    return ResponseCache(make_store(settings, engine, redis), settings.cache)
