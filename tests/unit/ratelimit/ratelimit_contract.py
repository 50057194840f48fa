"""Behaviour every limiter store must show, run against each store by subclassing.

A subclass provides two fixtures: `limiter` (a RateLimiter) and `leases` (a ConcurrencyLimiter), both
reading time from the `clock` fixture defined here, so window edges can be hit to the microsecond.
Not collected by itself (no `test_` prefix); `test_memory.py` and the Redis integration test use it.
"""

from __future__ import annotations

import time

import pytest

from modelport.ratelimit import ConcurrencyLimiter, RateLimiter


class FakeClock:
    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    # Near real time so Redis key TTLs (relative) stay meaningful; whole second so sums are exact.
    return FakeClock(float(int(time.time())))


class RateLimiterContract:
    async def test_burst_of_exactly_limit_then_denied(self, limiter: RateLimiter, clock: FakeClock) -> None:
        seen = [await limiter.hit("k", 5) for _ in range(5)]
        assert [d.allowed for d in seen] == [True] * 5
        assert [d.remaining for d in seen] == [4, 3, 2, 1, 0]
        assert all(d.limit == 5 and d.retry_after == 0 for d in seen)
        denied = await limiter.hit("k", 5)
        assert not denied.allowed
        assert denied.remaining == 0
        assert denied.limit == 5

    async def test_adjust_counts_more_or_gives_back(self, limiter: RateLimiter, clock: FakeClock) -> None:
        # Tokens per minute: 100 admitted for an estimate of 60; the request used 90, then one used 10 of 40.
        assert (await limiter.hit("t", 100, 60, 60)).remaining == 40
        await limiter.adjust("t", 100, 60, 30)
        assert (await limiter.hit("t", 100, 60, 0)).remaining == 10
        assert not (await limiter.hit("t", 100, 60, 40)).allowed
        await limiter.adjust("t", 100, 60, -30)
        assert (await limiter.hit("t", 100, 60, 0)).remaining == 40
        await limiter.adjust("t", 100, 60, -500)  # never below none owed
        assert (await limiter.hit("t", 100, 60, 0)).remaining == 100
        await limiter.adjust("t", 100, 60, 150)  # may go past the limit: the next hit waits longer
        denied = await limiter.hit("t", 100, 60, 1)
        assert not denied.allowed and denied.retry_after == 31

    async def test_retry_after_and_reset_at(self, limiter: RateLimiter, clock: FakeClock) -> None:
        # 3 per 60 s: one request comes back every 20 s.
        for _ in range(3):
            last = await limiter.hit("k", 3, 60)
        assert last.reset_at == pytest.approx(clock.now + 60)
        denied = await limiter.hit("k", 3, 60)
        assert not denied.allowed
        assert denied.retry_after == 20
        assert denied.reset_at == pytest.approx(clock.now + 60)

    async def test_capacity_returns_exactly_at_the_edge(self, limiter: RateLimiter, clock: FakeClock) -> None:
        for _ in range(3):
            assert (await limiter.hit("k", 3, 60)).allowed
        clock.advance(19.999)
        early = await limiter.hit("k", 3, 60)
        assert not early.allowed
        assert early.retry_after == 1  # 1 ms left, rounded up to a whole second
        clock.advance(0.001)
        on_time = await limiter.hit("k", 3, 60)
        assert on_time.allowed
        assert on_time.remaining == 0
        assert not (await limiter.hit("k", 3, 60)).allowed

    async def test_idle_for_a_window_gives_a_full_burst(self, limiter: RateLimiter, clock: FakeClock) -> None:
        for _ in range(4):
            await limiter.hit("k", 4, 60)
        clock.advance(60)
        again = [await limiter.hit("k", 4, 60) for _ in range(5)]
        assert [d.allowed for d in again] == [True, True, True, True, False]
        assert again[0].remaining == 3

    async def test_long_run_rate_is_limit_per_window(self, limiter: RateLimiter, clock: FakeClock) -> None:
        # Hammer every second for 10 windows: burst of 6, then one every 10 s.
        allowed = 0
        for _ in range(600):
            allowed += (await limiter.hit("k", 6, 60)).allowed
            clock.advance(1)
        assert allowed == 6 + 59  # the burst, then one per 10 s for the remaining 590 s

    async def test_limit_not_dividing_window(self, limiter: RateLimiter, clock: FakeClock) -> None:
        results = [(await limiter.hit("k", 7, 60)).allowed for _ in range(8)]
        assert results == [True] * 7 + [False]
        clock.advance(60)
        results = [(await limiter.hit("k", 7, 60)).allowed for _ in range(8)]
        assert results == [True] * 7 + [False]

    async def test_partial_refill_counts(self, limiter: RateLimiter, clock: FakeClock) -> None:
        for _ in range(6):
            await limiter.hit("k", 6, 60)
        clock.advance(25)  # 2.5 intervals of 10 s: two requests back
        peek = await limiter.hit("k", 6, 60, cost=0)
        assert peek.allowed
        assert peek.remaining == 2
        assert peek.reset_at == pytest.approx(clock.now + 35)

    async def test_cost_counts_and_a_denial_consumes_nothing(self, limiter: RateLimiter, clock: FakeClock) -> None:
        first = await limiter.hit("k", 5, 60, cost=2)
        assert first.allowed and first.remaining == 3
        too_big = await limiter.hit("k", 5, 60, cost=4)
        assert not too_big.allowed
        assert too_big.remaining == 3
        assert too_big.retry_after == 12  # one more unit comes back after 60/5 s
        fits = await limiter.hit("k", 5, 60, cost=3)
        assert fits.allowed and fits.remaining == 0

    async def test_cost_zero_only_peeks(self, limiter: RateLimiter, clock: FakeClock) -> None:
        for _ in range(3):
            peek = await limiter.hit("k", 2, 60, cost=0)
            assert peek.allowed and peek.remaining == 2
            assert peek.reset_at == pytest.approx(clock.now)
        assert (await limiter.hit("k", 2)).remaining == 1

    async def test_cost_above_limit_never_fits(self, limiter: RateLimiter, clock: FakeClock) -> None:
        d = await limiter.hit("k", 3, 60, cost=4)
        assert not d.allowed
        assert d.retry_after >= 1
        assert d.remaining == 3

    async def test_limit_zero_blocks(self, limiter: RateLimiter, clock: FakeClock) -> None:
        d = await limiter.hit("k", 0, 60)
        assert not d.allowed
        assert d.remaining == 0
        assert d.retry_after == 60
        assert d.reset_at == pytest.approx(clock.now + 60)

    async def test_keys_are_independent(self, limiter: RateLimiter, clock: FakeClock) -> None:
        assert (await limiter.hit("team:1:inference", 1)).allowed
        assert not (await limiter.hit("team:1:inference", 1)).allowed
        assert (await limiter.hit("team:1:query", 1)).allowed
        assert (await limiter.hit("team:2:inference", 1)).allowed

    async def test_raised_limit_applies_at_once(self, limiter: RateLimiter, clock: FakeClock) -> None:
        for _ in range(2):
            await limiter.hit("k", 2, 60)
        assert not (await limiter.hit("k", 2, 60)).allowed
        upgraded = await limiter.hit("k", 10, 60)  # 2 of 10 used: 7 more now
        assert upgraded.allowed
        assert upgraded.remaining == 7
        more = [(await limiter.hit("k", 10, 60)).allowed for _ in range(8)]
        assert more == [True] * 7 + [False]

    async def test_lowered_limit_keeps_the_count(self, limiter: RateLimiter, clock: FakeClock) -> None:
        for _ in range(3):
            await limiter.hit("k", 10, 60)
        d = await limiter.hit("k", 4, 60)  # 3 of 4 used: this is the last one
        assert d.allowed
        assert d.remaining == 0
        assert not (await limiter.hit("k", 4, 60)).allowed

    async def test_lowered_limit_reports_zero_not_negative(self, limiter: RateLimiter, clock: FakeClock) -> None:
        for _ in range(10):
            await limiter.hit("k", 10, 120)  # 120 s of debt, more than the new limit's whole capacity
        d = await limiter.hit("k", 2, 60)
        assert not d.allowed
        assert d.remaining == 0

    @pytest.mark.parametrize(("limit", "window", "cost"), [(-1, 60, 1), (5, 0, 1), (5, 60, -1)])
    async def test_bad_arguments(
        self, limiter: RateLimiter, clock: FakeClock, limit: int, window: int, cost: int
    ) -> None:
        with pytest.raises(ValueError):
            await limiter.hit("k", limit, window, cost)


class ConcurrencyLimiterContract:
    async def test_acquire_up_to_limit(self, leases: ConcurrencyLimiter, clock: FakeClock) -> None:
        held = [await leases.acquire("k", 3, 30) for _ in range(3)]
        assert all(lease is not None for lease in held)
        assert len({lease.lease_id for lease in held if lease}) == 3
        assert held[0] is not None and held[0].expires_at == pytest.approx(clock.now + 30)
        assert await leases.acquire("k", 3, 30) is None

    async def test_release_frees_a_slot_once(self, leases: ConcurrencyLimiter, clock: FakeClock) -> None:
        a = await leases.acquire("k", 2, 30)
        b = await leases.acquire("k", 2, 30)
        assert a is not None and b is not None
        await leases.release(a)
        await leases.release(a)  # idempotent: must not free b's slot too
        assert await leases.acquire("k", 2, 30) is not None
        assert await leases.acquire("k", 2, 30) is None

    async def test_release_nowait_frees_the_slot_or_defers_to_release(
        self, leases: ConcurrencyLimiter, clock: FakeClock
    ) -> None:
        lease = await leases.acquire("k", 1, 30)
        assert lease is not None
        if not leases.release_nowait(lease):  # a backend that needs I/O: the caller awaits release
            await leases.release(lease)
        again = await leases.acquire("k", 1, 30)
        assert again is not None
        assert await leases.acquire("k", 1, 30) is None

    async def test_leases_expire(self, leases: ConcurrencyLimiter, clock: FakeClock) -> None:
        first = await leases.acquire("k", 2, 10)
        clock.advance(5)
        second = await leases.acquire("k", 2, 10)
        assert first is not None and second is not None
        assert await leases.acquire("k", 2, 10) is None
        clock.advance(4.999)
        assert await leases.acquire("k", 2, 10) is None
        clock.advance(0.001)  # the first lease has expired; its dead holder cannot leak the slot
        third = await leases.acquire("k", 2, 10)
        assert third is not None
        assert await leases.acquire("k", 2, 10) is None
        await leases.release(first)  # releasing an expired lease is a no-op
        assert await leases.acquire("k", 2, 10) is None

    async def test_renew_keeps_a_lease_alive(self, leases: ConcurrencyLimiter, clock: FakeClock) -> None:
        lease = await leases.acquire("k", 1, 10)
        assert lease is not None
        clock.advance(8)
        renewed = await leases.renew(lease, 10)
        assert renewed is not None
        assert renewed.lease_id == lease.lease_id
        assert renewed.expires_at == pytest.approx(clock.now + 10)
        clock.advance(8)  # past the original expiry, within the renewed one
        assert await leases.acquire("k", 1, 10) is None
        await leases.release(renewed)
        assert await leases.acquire("k", 1, 10) is not None

    async def test_renew_after_expiry_fails(self, leases: ConcurrencyLimiter, clock: FakeClock) -> None:
        lease = await leases.acquire("k", 1, 10)
        assert lease is not None
        clock.advance(10)
        assert await leases.renew(lease, 10) is None
        await leases.release(lease)
        assert await leases.renew(lease, 10) is None

    async def test_keys_are_independent(self, leases: ConcurrencyLimiter, clock: FakeClock) -> None:
        assert await leases.acquire("team:1", 1, 30) is not None
        assert await leases.acquire("team:1", 1, 30) is None
        assert await leases.acquire("team:2", 1, 30) is not None

    async def test_limit_zero_refuses(self, leases: ConcurrencyLimiter, clock: FakeClock) -> None:
        assert await leases.acquire("k", 0, 30) is None

    async def test_bad_arguments(self, leases: ConcurrencyLimiter, clock: FakeClock) -> None:
        with pytest.raises(ValueError):
            await leases.acquire("k", -1, 30)
        with pytest.raises(ValueError):
            await leases.acquire("k", 1, 0)
