"""The limiter interfaces and the values they return.

Two small interfaces, each with an in-process store (`memory.py`, the embedded default) and a Redis
store (`redis_store.py`, shared by every process and machine):

- `RateLimiter`: "at most `limit` requests per `window_seconds`" per key (GCRA, see `gcra.py`).
- `ConcurrencyLimiter`: "at most `limit` leases held at once" per key; leases expire on their own so a
  crashed process cannot leak them.

Keys are opaque strings chosen by the caller, one per quota (e.g. ``team:42:inference``). A key should be
used with one window length; changing its limit later (a tier upgrade) is fine and takes effect at once,
keeping the requests already counted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

Clock = Callable[[], float]
"""Returns UNIX seconds; injectable so tests can move time by hand."""


def system_clock() -> float:
    return time.time()


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of one `RateLimiter.hit`.

    - `remaining`: whole requests (of cost 1) that could still be made right now.
    - `reset_at`: UNIX seconds at which the key is fully replenished (`remaining` back to `limit`).
    - `retry_after`: whole seconds until this same hit would be allowed; 0 when allowed, >= 1 when denied.
    """

    allowed: bool
    limit: int
    remaining: int
    reset_at: float
    retry_after: int


@dataclass(frozen=True, slots=True)
class Lease:
    """One held slot of a `ConcurrencyLimiter`; valid until `expires_at` (UNIX seconds) unless renewed."""

    key: str
    lease_id: str
    expires_at: float


class RateLimiter(Protocol):
    async def hit(self, key: str, limit: int, window_seconds: int = 60, cost: int = 1) -> Decision:
        """Count `cost` requests against `key` if they fit, and say whether they did.

        `limit` 0 denies everything; `cost` 0 only reports the current state.
        """
        ...

    async def adjust(self, key: str, limit: int, window_seconds: int = 60, delta: int = 0) -> None:
        """Count `delta` more units against `key` (fewer when negative, never below none), always: what a
        request used beyond or below what `hit` admitted it for (tokens known only at its end)."""
        ...

    async def aclose(self) -> None: ...


class ConcurrencyLimiter(Protocol):
    async def acquire(self, key: str, limit: int, ttl_seconds: float) -> Lease | None:
        """Take a slot of `key` for at most `ttl_seconds`, or None when `limit` slots are held."""
        ...

    async def renew(self, lease: Lease, ttl_seconds: float) -> Lease | None:
        """Push a held lease's expiry to now + `ttl_seconds` (for long streams); None if it was lost."""
        ...

    async def release(self, lease: Lease) -> None:
        """Give the slot back. Idempotent: releasing twice, or after expiry, does nothing."""
        ...

    def release_nowait(self, lease: Lease) -> bool:
        """`release` done here and now when the store needs no I/O for it (True); False: await `release`.
        Saves the caller a task per request on the in-process store."""
        ...

    async def aclose(self) -> None: ...


def check_rate_args(limit: int, window_seconds: int, cost: int) -> None:
    """Programming errors, not client errors: the caller passes these from configuration."""
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if window_seconds < 1:
        raise ValueError(f"window_seconds must be >= 1, got {window_seconds}")
    if cost < 0:
        raise ValueError(f"cost must be >= 0, got {cost}")


def check_lease_args(limit: int, ttl_seconds: float) -> None:
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    if not ttl_seconds > 0:
        raise ValueError(f"ttl_seconds must be > 0, got {ttl_seconds}")
