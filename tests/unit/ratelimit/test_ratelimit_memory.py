"""The in-process limiter stores: the shared contract, plus memory bounds."""

from __future__ import annotations

import pytest

from modelport.ratelimit import MemoryConcurrencyLimiter, MemoryRateLimiter
from tests.unit.ratelimit.ratelimit_contract import ConcurrencyLimiterContract, FakeClock, RateLimiterContract, clock

__all__ = ["clock"]  # the fixture, re-exported so pytest finds it in this module


@pytest.fixture
def limiter(clock: FakeClock) -> MemoryRateLimiter:
    return MemoryRateLimiter(clock)


@pytest.fixture
def leases(clock: FakeClock) -> MemoryConcurrencyLimiter:
    return MemoryConcurrencyLimiter(clock)


class TestMemoryRateLimiter(RateLimiterContract):
    pass


class TestMemoryConcurrencyLimiter(ConcurrencyLimiterContract):
    pass


async def test_idle_rate_keys_are_swept(clock: FakeClock) -> None:
    limiter = MemoryRateLimiter(clock)
    for i in range(100):
        await limiter.hit(f"short:{i}", 10, 1)
    await limiter.hit("long", 1, 3600)
    assert len(limiter) == 101
    clock.advance(60)  # past the sweep interval; short keys drained long ago
    await limiter.hit("other", 10, 60)
    assert len(limiter) == 2  # "long" still carries state, "other" is new
    assert not (await limiter.hit("long", 1, 3600)).allowed  # the sweep kept live state


async def test_rate_keys_are_capped(clock: FakeClock) -> None:
    limiter = MemoryRateLimiter(clock, max_keys=10)
    for i in range(50):
        await limiter.hit(f"k{i}", 1, 3600)
    assert len(limiter) == 10
    assert not (await limiter.hit("k49", 1, 3600)).allowed  # most recent keys are kept
    assert (await limiter.hit("k0", 1, 3600)).allowed  # the oldest were forgotten


async def test_idle_lease_keys_are_swept(clock: FakeClock) -> None:
    leases = MemoryConcurrencyLimiter(clock)
    for i in range(100):
        assert await leases.acquire(f"k{i}", 1, 5) is not None
    kept = await leases.acquire("long", 1, 3600)
    assert len(leases) == 101
    clock.advance(60)
    await leases.acquire("other", 1, 5)
    assert len(leases) == 2
    assert kept is not None
    await leases.release(kept)
    assert len(leases) == 1


async def test_released_lease_key_is_dropped(clock: FakeClock) -> None:
    leases = MemoryConcurrencyLimiter(clock)
    lease = await leases.acquire("k", 1, 30)
    assert lease is not None
    await leases.release(lease)
    assert len(leases) == 0
