"""GCRA (the generic cell rate algorithm), the rate-limit algorithm of both limiter stores.

Why GCRA rather than fixed, sliding-log or sliding-window-counter windows:
- Constant state per key (the "theoretical arrival time", TAT, and the interval it was counted in), so
  memory does not grow with the limit, and one atomic read-modify-write per request.
- Exact, closed-form `remaining`, `reset_at` and `retry_after`; no approximation as in a sliding window
  counter, no per-request entries as in a sliding log.
- No burst at window edges as in a fixed window: capacity comes back continuously, one request every
  `window / limit` seconds. That is how the upstreams whose protocols we serve describe their own limits
  (a bucket "continuously replenished up to your maximum"), so client back-off logic behaves the same.

Semantics of `limit` per `window`: a key that has been idle for a window may send `limit` requests at
once; after that one more every `window / limit`. The long-run rate is exactly `limit` per `window`; over
any one window a client that starts from idle can send at most `limit` plus what replenishes meanwhile.

A changed limit (a tier upgrade or downgrade) applies at once and keeps the requests already counted: the
stored state remembers the emission interval it was built with and rescales its debt to the new one, so
2 requests made under a limit of 2 count as 2, not 10, under a new limit of 10.

All arithmetic is in integer microseconds so a burst of exactly `limit` is allowed and the next one is
not, with no float rounding at the edge. The emission interval is rounded *down* to a whole microsecond,
so a key idle for one window is exactly full again; the long-run rate errs on the lenient side by less
than 1 µs per request. `scripts.GCRA_LUA` mirrors this module line for line; the shared behavioural tests
hold both limiter stores to the same results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .base import Decision

US_PER_S = 1_000_000


@dataclass(frozen=True, slots=True)
class GcraState:
    tat_us: int  # theoretical arrival time: the key is fully replenished at this instant
    interval_us: int  # the emission interval the debt (tat - now) was counted in


@dataclass(frozen=True, slots=True)
class GcraStep:
    allowed: bool
    store: GcraState | None  # new state to store, None when it does not change
    remaining: int
    reset_us: int
    retry_us: int


def emission_interval_us(limit: int, window_us: int) -> int:
    return max(1, window_us // limit)


def step(state: GcraState | None, now_us: int, limit: int, window_us: int, cost: int) -> GcraStep:
    """One hit of `cost` at `now_us` against the stored `state` (None: never seen or expired).

    `limit` >= 1 (the caller handles 0)."""
    interval = emission_interval_us(limit, window_us)
    capacity = limit * interval
    tat = now_us
    if state is not None and state.tat_us > now_us:
        debt = state.tat_us - now_us
        if state.interval_us != interval:
            debt = debt * interval // state.interval_us  # same number of requests, new interval
        tat = now_us + debt
    new_tat = tat + cost * interval
    if new_tat - now_us > capacity:
        # Denied: nothing is counted; retry when enough debt has drained for `cost` to fit.
        remaining = max(0, (capacity - (tat - now_us)) // interval)
        return GcraStep(False, None, remaining, tat, new_tat - capacity - now_us)
    remaining = (capacity - (new_tat - now_us)) // interval
    store = GcraState(new_tat, interval) if cost > 0 else None
    return GcraStep(True, store, remaining, new_tat, 0)


def adjusted(state: GcraState | None, now_us: int, limit: int, window_us: int, delta: int) -> GcraState | None:
    """The state after counting `delta` more units (fewer when negative) with no decision: a request that
    turned out to use more or less than it was admitted for (tokens per minute). None: nothing owed."""
    interval = emission_interval_us(limit, window_us)
    tat = now_us
    if state is not None and state.tat_us > now_us:
        debt = state.tat_us - now_us
        if state.interval_us != interval:
            debt = debt * interval // state.interval_us
        tat = now_us + debt
    tat += delta * interval
    return GcraState(tat, interval) if tat > now_us else None


def to_decision(limit: int, remaining: int, reset_us: int, retry_us: int, allowed: bool) -> Decision:
    retry_after = 0 if allowed else max(1, math.ceil(retry_us / US_PER_S))
    return Decision(
        allowed=allowed,
        limit=limit,
        remaining=remaining,
        reset_at=reset_us / US_PER_S,
        retry_after=retry_after,
    )


def blocked(now_us: int, window_us: int) -> Decision:
    """`limit` 0: nothing is ever allowed; suggest retrying after one window (the tier may change)."""
    return to_decision(0, 0, now_us + window_us, window_us, allowed=False)
