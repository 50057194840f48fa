"""Redis limiters: shared by every process and machine that uses the same Redis and prefix.

Each decision is one atomic Lua script (`scripts.py`), run with EVALSHA and reloaded on NOSCRIPT by
redis-py's `register_script`. Keys are ``<prefix>:rl:<key>`` (a GCRA timestamp) and ``<prefix>:cc:<key>``
(a sorted set of leases); both expire on their own once they carry no state.
"""

from __future__ import annotations

import secrets
from typing import Any

from redis.asyncio import Redis

from . import gcra, scripts
from .base import Clock, Decision, Lease, check_lease_args, check_rate_args


def _namespace(prefix: str) -> str:
    return prefix.rstrip(":")


class _ScriptClock:
    """ARGV[1] of every script: '' to use the Redis server's TIME, or an injected clock's µs."""

    def __init__(self, clock: Clock | None) -> None:
        self._clock = clock

    def arg(self) -> str | int:
        return "" if self._clock is None else round(self._clock() * gcra.US_PER_S)


class RedisRateLimiter:
    def __init__(self, redis: Redis, prefix: str, *, clock: Clock | None = None) -> None:
        self._redis = redis
        self._ns = _namespace(prefix)
        self._clock = _ScriptClock(clock)
        self._script = redis.register_script(scripts.GCRA_LUA)
        self._adjust = redis.register_script(scripts.GCRA_ADJUST_LUA)

    def redis_key(self, key: str) -> str:
        return f"{self._ns}:rl:{key}"

    async def hit(self, key: str, limit: int, window_seconds: int = 60, cost: int = 1) -> Decision:
        check_rate_args(limit, window_seconds, cost)
        window_us = window_seconds * gcra.US_PER_S
        if limit == 0:
            now_us = await self._now_us()
            return gcra.blocked(now_us, window_us)
        reply: list[Any] = await self._script(
            keys=[self.redis_key(key)], args=[self._clock.arg(), limit, window_us, cost]
        )
        allowed, remaining, reset_us, retry_us = (int(v) for v in reply)
        return gcra.to_decision(limit, remaining, reset_us, retry_us, allowed=bool(allowed))

    async def adjust(self, key: str, limit: int, window_seconds: int = 60, delta: int = 0) -> None:
        check_rate_args(limit, window_seconds, 0)
        if limit == 0 or delta == 0:
            return
        await self._adjust(
            keys=[self.redis_key(key)], args=[self._clock.arg(), limit, window_seconds * gcra.US_PER_S, delta]
        )

    async def _now_us(self) -> int:
        arg = self._clock.arg()
        if isinstance(arg, int):
            return arg
        seconds, micros = await self._redis.time()
        return int(seconds) * gcra.US_PER_S + int(micros)

    async def aclose(self) -> None:
        """Nothing to release: the Redis client belongs to the caller."""


class RedisConcurrencyLimiter:
    def __init__(self, redis: Redis, prefix: str, *, clock: Clock | None = None) -> None:
        self._redis = redis
        self._ns = _namespace(prefix)
        self._clock = _ScriptClock(clock)
        self._acquire = redis.register_script(scripts.LEASE_ACQUIRE_LUA)
        self._renew = redis.register_script(scripts.LEASE_RENEW_LUA)

    def redis_key(self, key: str) -> str:
        return f"{self._ns}:cc:{key}"

    async def acquire(self, key: str, limit: int, ttl_seconds: float) -> Lease | None:
        check_lease_args(limit, ttl_seconds)
        lease_id = secrets.token_hex(16)
        ttl_us = max(1, round(ttl_seconds * gcra.US_PER_S))
        expires_us = int(
            await self._acquire(keys=[self.redis_key(key)], args=[self._clock.arg(), limit, ttl_us, lease_id])
        )
        if expires_us == 0:
            return None
        return Lease(key=key, lease_id=lease_id, expires_at=expires_us / gcra.US_PER_S)

    async def renew(self, lease: Lease, ttl_seconds: float) -> Lease | None:
        check_lease_args(1, ttl_seconds)
        ttl_us = max(1, round(ttl_seconds * gcra.US_PER_S))
        expires_us = int(
            await self._renew(keys=[self.redis_key(lease.key)], args=[self._clock.arg(), ttl_us, lease.lease_id])
        )
        if expires_us == 0:
            return None
        return Lease(key=lease.key, lease_id=lease.lease_id, expires_at=expires_us / gcra.US_PER_S)

    async def release(self, lease: Lease) -> None:
        # ZREM of an absent member is a no-op, which makes release idempotent.
        await self._redis.zrem(self.redis_key(lease.key), lease.lease_id)

    def release_nowait(self, lease: Lease) -> bool:
        return False  # a round trip to Redis: the caller awaits `release`

    async def aclose(self) -> None:
        """Nothing to release: the Redis client belongs to the caller."""
