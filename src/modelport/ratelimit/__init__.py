"""Rate limits (GCRA) and concurrency limits, in-process or in Redis. See `base.py` for the interface."""

from .base import Clock, ConcurrencyLimiter, Decision, Lease, RateLimiter
from .factory import Limiters, make_limiters
from .headers import rate_limit_headers, rate_limited_error
from .memory import MemoryConcurrencyLimiter, MemoryRateLimiter
from .redis_backend import RedisConcurrencyLimiter, RedisRateLimiter

__all__ = [
    "Clock",
    "ConcurrencyLimiter",
    "Decision",
    "Lease",
    "Limiters",
    "MemoryConcurrencyLimiter",
    "MemoryRateLimiter",
    "RateLimiter",
    "RedisConcurrencyLimiter",
    "RedisRateLimiter",
    "make_limiters",
    "rate_limit_headers",
    "rate_limited_error",
]
