"""In-process limiters: the embedded default (one server process, no Redis).

Correct only within one process and one event loop: each method does its read-modify-write without an
`await` in between, so the event loop is the lock. Several worker processes need the Redis store.

Memory is bounded: a key whose state has fully drained is the same as an absent key, so it is dropped by
a periodic sweep. `max_keys` is a last-resort cap against a flood of distinct live keys; past it the least
recently used key is forgotten (that forgives its recent usage, which beats running out of memory).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict

from . import gcra
from .base import Clock, Decision, Lease, check_lease_args, check_rate_args, system_clock

DEFAULT_MAX_KEYS = 100_000
SWEEP_EVERY_S = 30.0


def _us(seconds: float) -> int:
    return round(seconds * gcra.US_PER_S)


class _Sweeper:
    """Decides when a full sweep of expired keys is due, so the cost is amortised over many calls."""

    def __init__(self, clock: Clock, every_s: float) -> None:
        self._clock = clock
        self._every_s = every_s
        self._next = clock() + every_s

    def due(self) -> bool:
        now = self._clock()
        if now < self._next:
            return False
        self._next = now + self._every_s
        return True


class MemoryRateLimiter:
    def __init__(self, clock: Clock = system_clock, *, max_keys: int = DEFAULT_MAX_KEYS) -> None:
        self._clock = clock
        self._max_keys = max_keys
        self._states: OrderedDict[str, gcra.GcraState] = OrderedDict()  # least recently hit first
        self._sweeper = _Sweeper(clock, SWEEP_EVERY_S)

    async def hit(self, key: str, limit: int, window_seconds: int = 60, cost: int = 1) -> Decision:
        check_rate_args(limit, window_seconds, cost)
        now_us = _us(self._clock())
        window_us = window_seconds * gcra.US_PER_S
        if self._sweeper.due():
            self._sweep(now_us)
        if limit == 0:
            return gcra.blocked(now_us, window_us)
        result = gcra.step(self._states.get(key), now_us, limit, window_us, cost)
        if result.store is not None:
            self._states[key] = result.store
            self._states.move_to_end(key)
            while len(self._states) > self._max_keys:
                self._states.popitem(last=False)
        return gcra.to_decision(limit, result.remaining, result.reset_us, result.retry_us, result.allowed)

    async def adjust(self, key: str, limit: int, window_seconds: int = 60, delta: int = 0) -> None:
        check_rate_args(limit, window_seconds, 0)
        if limit == 0 or delta == 0:
            return
        now_us = _us(self._clock())
        state = gcra.adjusted(self._states.get(key), now_us, limit, window_seconds * gcra.US_PER_S, delta)
        if state is None:
            self._states.pop(key, None)
        else:
            self._states[key] = state
            self._states.move_to_end(key)

    def _sweep(self, now_us: int) -> None:
        for key in [k for k, state in self._states.items() if state.tat_us <= now_us]:
            del self._states[key]

    def __len__(self) -> int:
        return len(self._states)

    async def aclose(self) -> None:
        self._states.clear()


class MemoryConcurrencyLimiter:
    def __init__(self, clock: Clock = system_clock, *, max_keys: int = DEFAULT_MAX_KEYS) -> None:
        self._clock = clock
        self._max_keys = max_keys
        # key -> {lease_id: expires_at (UNIX s)}, least recently acquired first
        self._leases: OrderedDict[str, dict[str, float]] = OrderedDict()
        self._ids = itertools.count(1)  # lease ids only need to be unique within this limiter
        self._sweeper = _Sweeper(clock, SWEEP_EVERY_S)

    async def acquire(self, key: str, limit: int, ttl_seconds: float) -> Lease | None:
        check_lease_args(limit, ttl_seconds)
        now = self._clock()
        if self._sweeper.due():
            self._sweep(now)
        held = self._leases.get(key) or {}
        # Expired leases (a request that never released) only matter at the limit: prune them there, not
        # on every call (a scan of every lease in flight); the periodic sweep drops them too.
        if len(held) >= limit:
            held = self._prune(key, now)
            if len(held) >= limit:
                return None
        lease = Lease(key=key, lease_id=f"{next(self._ids):x}", expires_at=now + ttl_seconds)
        held[lease.lease_id] = lease.expires_at
        self._leases[key] = held
        self._leases.move_to_end(key)
        while len(self._leases) > self._max_keys:
            self._leases.popitem(last=False)
        return lease

    async def renew(self, lease: Lease, ttl_seconds: float) -> Lease | None:
        check_lease_args(1, ttl_seconds)
        now = self._clock()
        held = self._prune(lease.key, now)
        if lease.lease_id not in held:
            return None
        renewed = Lease(key=lease.key, lease_id=lease.lease_id, expires_at=now + ttl_seconds)
        held[lease.lease_id] = renewed.expires_at
        return renewed

    async def release(self, lease: Lease) -> None:
        self.release_nowait(lease)

    def release_nowait(self, lease: Lease) -> bool:
        held = self._leases.get(lease.key)
        if held is None:
            return True
        held.pop(lease.lease_id, None)
        if not held:
            del self._leases[lease.key]
        return True

    def _prune(self, key: str, now: float) -> dict[str, float]:
        """Drop the key's expired leases (a lease is valid while now < expires_at); return the live ones."""
        held = self._leases.get(key)
        if held is None:
            return {}
        for lease_id in [i for i, exp in held.items() if exp <= now]:
            del held[lease_id]
        if not held:
            del self._leases[key]
            return {}
        return held

    def _sweep(self, now: float) -> None:
        for key in list(self._leases):
            self._prune(key, now)

    def __len__(self) -> int:
        return len(self._leases)

    async def aclose(self) -> None:
        self._leases.clear()
