"""Headers from decisions, the 429 error, and the limiter store factory."""

from __future__ import annotations

from modelport.errors import RateLimited
from modelport.ratelimit import (
    Decision,
    MemoryConcurrencyLimiter,
    MemoryRateLimiter,
    make_limiters,
    rate_limit_headers,
    rate_limited_error,
)
from modelport.ratelimit.redis_store import RedisConcurrencyLimiter, RedisRateLimiter
from modelport.services import make_redis
from tests.unit.ratelimit.ratelimit_contract import FakeClock


def test_headers_on_an_allowed_decision() -> None:
    d = Decision(allowed=True, limit=60, remaining=59, reset_at=1_700_000_000.25, retry_after=0)
    assert rate_limit_headers(d) == {
        "X-RateLimit-Limit": "60",
        "X-RateLimit-Remaining": "59",
        "X-RateLimit-Reset": "1700000001",  # epoch seconds, rounded up
    }


def test_headers_on_a_denial_add_retry_after() -> None:
    d = Decision(allowed=False, limit=3, remaining=0, reset_at=1_700_000_060.0, retry_after=20)
    headers = rate_limit_headers(d)
    assert headers["Retry-After"] == "20"
    assert headers["X-RateLimit-Reset"] == "1700000060"
    assert headers["X-RateLimit-Remaining"] == "0"


def test_rate_limited_error_carries_headers() -> None:
    d = Decision(allowed=False, limit=3, remaining=0, reset_at=1_700_000_060.0, retry_after=20)
    err = rate_limited_error(d)
    assert isinstance(err, RateLimited)
    assert err.status == 429
    assert err.error_type == "rate_limit_exceeded"
    assert err.headers["Retry-After"] == "20"


async def test_headers_from_a_real_decision() -> None:
    clock = FakeClock(1_700_000_000.0)
    limiter = MemoryRateLimiter(clock)
    await limiter.hit("k", 2, 60)
    await limiter.hit("k", 2, 60)
    headers = rate_limit_headers(await limiter.hit("k", 2, 60))
    assert headers == {
        "X-RateLimit-Limit": "2",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": "1700000060",
        "Retry-After": "30",
    }


async def test_factory_without_redis_is_in_process() -> None:
    limiters = make_limiters(None, "p")
    rate, concurrency = limiters
    assert isinstance(rate, MemoryRateLimiter)
    assert isinstance(concurrency, MemoryConcurrencyLimiter)
    await limiters.aclose()


async def test_factory_with_redis_url_connects_lazily() -> None:
    # No server at this port: building must not connect; only a call would.
    client = make_redis("redis://127.0.0.1:1/0")
    limiters = make_limiters(client, "p")
    assert isinstance(limiters.rate, RedisRateLimiter)
    assert isinstance(limiters.concurrency, RedisConcurrencyLimiter)
    assert limiters.rate.redis_key("team:1") == "p:rl:team:1"
    assert limiters.concurrency.redis_key("team:1") == "p:cc:team:1"
    await limiters.aclose()
    await client.aclose()
