"""Rate limits (GCRA) and concurrency limits, in-process or in Redis. See `base.py` for the interface.

The Redis limiter stores are `ratelimit.redis_store`, not re-exported here: importing this package must not
import redis-py (a process without Redis never loads it).
"""

from .base import Clock, ConcurrencyLimiter, Decision, Lease, RateLimiter
from .factory import Limiters, make_limiters
from .headers import rate_limit_headers, rate_limited_error
from .memory import MemoryConcurrencyLimiter, MemoryRateLimiter

__all__ = [
    "Clock",
    "ConcurrencyLimiter",
    "Decision",
    "Lease",
    "Limiters",
    "MemoryConcurrencyLimiter",
    "MemoryRateLimiter",
    "RateLimiter",
    "make_limiters",
    "rate_limit_headers",
    "rate_limited_error",
]
