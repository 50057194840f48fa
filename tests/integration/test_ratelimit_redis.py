"""The Redis limiter stores against a real Redis: the shared contract, plus Redis-only behaviour.

Redis is MODELPORT_TEST_REDIS_URL, else 127.0.0.1:6379. An unreachable Redis fails these tests; it
does not skip them. Every key lives under a prefix unique to this test run and is deleted afterwards.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "ratelimit"))
from modelport.ratelimit.redis_store import RedisConcurrencyLimiter, RedisRateLimiter
from tests.unit.ratelimit.ratelimit_contract import (
    ConcurrencyLimiterContract,
    FakeClock,
    RateLimiterContract,
    clock,
)

__all__ = ["clock"]  # the contract's fixture, re-exported so pytest finds it here

pytestmark = pytest.mark.redis

REDIS_URL = os.environ.get("MODELPORT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
RUN_PREFIX = f"mp-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def redis() -> AsyncIterator[Redis]:
    client = Redis.from_url(REDIS_URL, socket_connect_timeout=3)
    try:
        await client.ping()
    except Exception as exc:  # any connection failure is a test failure, never a skip
        await client.aclose()
        pytest.fail(f"Redis at {REDIS_URL} is unreachable: {exc!r}")
    yield client
    keys = [key async for key in client.scan_iter(match=f"{RUN_PREFIX}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


@pytest.fixture
def prefix() -> str:
    return f"{RUN_PREFIX}:{uuid.uuid4().hex[:8]}"


@pytest.fixture
def limiter(redis: Redis, prefix: str, clock: FakeClock) -> RedisRateLimiter:
    return RedisRateLimiter(redis, prefix, clock=clock)


@pytest.fixture
def leases(redis: Redis, prefix: str, clock: FakeClock) -> RedisConcurrencyLimiter:
    return RedisConcurrencyLimiter(redis, prefix, clock=clock)


class TestRedisRateLimiter(RateLimiterContract):
    pass


class TestRedisConcurrencyLimiter(ConcurrencyLimiterContract):
    pass


async def test_rate_key_is_namespaced_and_expires(redis: Redis, prefix: str) -> None:
    limiter = RedisRateLimiter(redis, prefix)
    await limiter.hit("team:1", 4, 60)
    keys = [k async for k in redis.scan_iter(match=f"{prefix}*")]
    assert keys == [f"{prefix}:rl:team:1".encode()]
    ttl_ms = await redis.pttl(keys[0])
    assert 14_000 < ttl_ms <= 15_000  # one request of 4/min drains in 15 s; then the key is gone


async def test_lease_key_is_namespaced_and_expires(redis: Redis, prefix: str) -> None:
    leases = RedisConcurrencyLimiter(redis, prefix)
    lease = await leases.acquire("team:1", 2, 30)
    assert lease is not None
    key = f"{prefix}:cc:team:1"
    assert await redis.zcard(key) == 1
    assert 29_000 < await redis.pttl(key) <= 30_000
    await leases.release(lease)
    assert not await redis.exists(key)  # an empty set disappears


async def test_server_clock(redis: Redis, prefix: str) -> None:
    limiter = RedisRateLimiter(redis, prefix)  # no clock: Redis TIME
    before = time.time()
    results = [await limiter.hit("k", 3, 60) for _ in range(4)]
    assert [d.allowed for d in results] == [True, True, True, False]
    assert results[3].retry_after in (19, 20)
    assert before + 55 < results[3].reset_at < time.time() + 65  # server and test clocks roughly agree
    assert (await limiter.hit("k", 0, 60)).reset_at > before


async def test_server_clock_leases(redis: Redis, prefix: str) -> None:
    leases = RedisConcurrencyLimiter(redis, prefix)
    lease = await leases.acquire("k", 1, 0.2)
    assert lease is not None
    assert await leases.acquire("k", 1, 0.2) is None
    await asyncio.sleep(0.25)
    assert await leases.acquire("k", 1, 0.2) is not None  # expired by the server's clock


async def test_state_is_shared_by_clients_with_the_same_prefix(redis: Redis, prefix: str) -> None:
    other = Redis.from_url(REDIS_URL)
    try:
        a = RedisRateLimiter(redis, prefix)
        b = RedisRateLimiter(other, prefix)
        elsewhere = RedisRateLimiter(other, prefix + "-other")
        assert (await a.hit("k", 2)).allowed
        assert (await b.hit("k", 2)).allowed
        assert not (await a.hit("k", 2)).allowed
        assert (await elsewhere.hit("k", 2)).allowed
    finally:
        await other.aclose()


async def test_concurrent_hits_admit_exactly_the_limit(redis: Redis, prefix: str) -> None:
    limiter = RedisRateLimiter(redis, prefix)
    decisions = await asyncio.gather(*(limiter.hit("k", 25, 3600) for _ in range(100)))
    assert sum(d.allowed for d in decisions) == 25
    assert sorted(d.remaining for d in decisions if d.allowed) == list(range(25))


async def test_concurrent_acquires_admit_exactly_the_limit(redis: Redis, prefix: str) -> None:
    leases = RedisConcurrencyLimiter(redis, prefix)
    got = await asyncio.gather(*(leases.acquire("k", 7, 60) for _ in range(50)))
    held = [lease for lease in got if lease is not None]
    assert len(held) == 7
    await asyncio.gather(*(leases.release(lease) for lease in held))
    assert await redis.zcard(f"{prefix}:cc:k") == 0
