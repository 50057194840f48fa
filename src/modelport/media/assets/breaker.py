"""A circuit breaker for the vendorA asset API.

closed → (N consecutive failures) → open: calls are refused at once for `open_seconds` → half-open: one
trial call goes through; its success closes the circuit, its failure opens it again. Per process.
(Hand-written: the maintained asyncio breakers on PyPI are either sync-first (pybreaker) or add a
dependency for these ~30 lines.)
"""

from __future__ import annotations

import time
from collections.abc import Callable


class CircuitBreaker:
    def __init__(self, failures: int, open_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._threshold = failures
        self._open_seconds = open_seconds
        self._clock = clock
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_running = False

    @property
    def state(self) -> str:
        if self._opened_at is None:
            return "closed"
        return "half-open" if self._clock() - self._opened_at >= self._open_seconds else "open"

    def allow(self) -> bool:
        """May a call go out now? In half-open state only one trial call at a time."""
        state = self.state
        if state == "closed":
            return True
        if state == "half-open" and not self._trial_running:
            self._trial_running = True
            return True
        return False

    def success(self) -> None:
        self._failures = 0
        self._opened_at = None
        self._trial_running = False

    def failure(self) -> None:
        self._trial_running = False
        self._failures += 1
        if self._opened_at is not None or self._failures >= self._threshold:
            self._opened_at = self._clock()
