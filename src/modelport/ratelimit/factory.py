"""Pick the limiter stores: Redis when a client is given, else in-process."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from .base import ConcurrencyLimiter, RateLimiter
from .memory import MemoryConcurrencyLimiter, MemoryRateLimiter

if TYPE_CHECKING:
    from redis.asyncio import Redis

DEFAULT_PREFIX = "modelport"


class Limiters(NamedTuple):
    """A (rate, concurrency) pair that unpacks like a tuple; close both with `aclose()` at shutdown."""

    rate: RateLimiter
    concurrency: ConcurrencyLimiter

    async def aclose(self) -> None:
        await self.concurrency.aclose()
        await self.rate.aclose()


def make_limiters(redis: Redis | None, prefix: str = DEFAULT_PREFIX) -> Limiters:
    """In-process limiters when `redis` is None (correct for one server process only), otherwise Redis
    limiters over that client, with keys under `prefix`. The client belongs to the caller (the process's
    service container), which closes it after the limiters."""
    if redis is None:
        return Limiters(MemoryRateLimiter(), MemoryConcurrencyLimiter())
    from .redis_store import RedisConcurrencyLimiter, RedisRateLimiter  # redis-py only when it is used

    return Limiters(RedisRateLimiter(redis, prefix), RedisConcurrencyLimiter(redis, prefix))
