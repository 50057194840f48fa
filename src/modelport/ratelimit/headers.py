"""Rate-limit response headers from a `Decision`.

`X-RateLimit-Reset` is UNIX epoch seconds (an integer, rounded up) at which the key is fully replenished:
the convention of the widest-used APIs that send this header name. `Retry-After` (RFC 9110) is the usual
delta in whole seconds, sent only on a denial, and says when the denied request would fit.
"""

from __future__ import annotations

import math

from modelport.errors import RateLimited

from .base import Decision


def rate_limit_headers(decision: Decision) -> dict[str, str]:
    headers = {
        "X-RateLimit-Limit": str(decision.limit),
        "X-RateLimit-Remaining": str(decision.remaining),
        "X-RateLimit-Reset": str(math.ceil(decision.reset_at)),
    }
    if not decision.allowed:
        headers["Retry-After"] = str(decision.retry_after)
    return headers


def rate_limited_error(decision: Decision, detail: str = "") -> RateLimited:
    """The 429 `rate_limit_exceeded` error for a denied decision, carrying its headers."""
    message = detail or (f"Rate limit of {decision.limit} requests reached; retry after {decision.retry_after} s.")
    return RateLimited(message, headers=rate_limit_headers(decision))
