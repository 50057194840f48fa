"""Pick the limiter backends from configuration: Redis when a URL is given, else in-process."""

from __future__ import annotations

from typing import NamedTuple

from redis.asyncio import BlockingConnectionPool, Redis

from .base import ConcurrencyLimiter, RateLimiter
from .memory import MemoryConcurrencyLimiter, MemoryRateLimiter
from .redis_backend import RedisConcurrencyLimiter, RedisRateLimiter

DEFAULT_PREFIX = "modelport"
DEFAULT_MAX_CONNECTIONS = 64


class Limiters(NamedTuple):
    """A (rate, concurrency) pair that unpacks like a tuple; close both with `aclose()` at shutdown."""

    rate: RateLimiter
    concurrency: ConcurrencyLimiter

    async def aclose(self) -> None:
        await self.concurrency.aclose()
        await self.rate.aclose()


def make_limiters(
    redis_url: str | None, prefix: str = DEFAULT_PREFIX, *, max_connections: int = DEFAULT_MAX_CONNECTIONS
) -> Limiters:
    """In-process limiters when `redis_url` is None (correct for one server process only), otherwise Redis
    limiters sharing one connection pool, with keys under `prefix`. Nothing connects until first use.

    The pool blocks (up to 5 s) when all `max_connections` are busy instead of raising at once, so a
    burst of requests queues for a connection rather than failing."""
    if redis_url is None:
        return Limiters(MemoryRateLimiter(), MemoryConcurrencyLimiter())
    pool = BlockingConnectionPool.from_url(
        redis_url,
        max_connections=max_connections,
        timeout=5.0,
        socket_timeout=5.0,
        socket_connect_timeout=5.0,
    )
    client = Redis.from_pool(pool)  # the client owns the pool and closes it
    # The rate limiter owns the shared client and closes it last (see Limiters.aclose).
    return Limiters(
        RedisRateLimiter(client, prefix, owns_client=True),
        RedisConcurrencyLimiter(client, prefix),
    )
