"""Which deployment serves a request: catalog lookup, order, session affinity and cooldowns.

Order: with a session id, rendezvous hashing ranks the deployments, so a session stays on one deployment
for as long as it is healthy and moves only if that one fails (no shared state needed: every process and
machine computes the same ranking). Without one, a rotating start spreads load. Deployments that failed
recently (429, 5xx, connection errors) sit out a cooldown and are tried last.

Cooldowns are kept per process: they are an optimisation (a failing deployment is still retried
correctly), so sharing them through Redis is not needed for correctness. A listener (the operator alerts)
hears when a deployment goes down (a cooldown after repeated failures; an upstream 429 is not "down") and
when it serves again (its first success after that, or after the process started); the alerts decide
across processes which change is news.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from collections import deque
from dataclasses import dataclass

from modelport.catalog_spec import Deployment, TextModel
from modelport.clock import now_ms
from modelport.metrics import DEPLOYMENT_COOLDOWN_UNTIL, DEPLOYMENT_COOLDOWNS, deployment_labels
from modelport.upstreams.health import (
    RECENT_ERRORS,
    DeploymentChange,
    DeploymentError,
    DeploymentHealth,
    HealthListener,
)

DEFAULT_COOLDOWN_SECONDS = 30.0
FAILURES_BEFORE_COOLDOWN = 3


@dataclass(frozen=True, slots=True)
class Candidate:
    key: str
    deployment: Deployment


class DeploymentRouter:
    def __init__(
        self, *, cooldown_seconds: float = DEFAULT_COOLDOWN_SECONDS, listener: HealthListener | None = None
    ) -> None:
        self._cooldown_seconds = cooldown_seconds
        self._listener = listener
        # What the listener was last told per deployment: True serving, False down (absent: nothing yet).
        self._told: dict[str, bool] = {}
        self._cooling_until: dict[str, float] = {}
        self._failures: dict[str, int] = {}
        # The last few failures per deployment, for the operator console (kept after a recovery).
        self._errors: dict[str, deque[DeploymentError]] = {}
        self._rotation = itertools.count()

    def plan(self, model: TextModel, session: str | None) -> list[Candidate]:
        candidates = [Candidate(f"{model.id}#{i}", d) for i, d in enumerate(model.deployments)]
        if len(candidates) > 1:
            if session:
                candidates.sort(key=lambda c: _rank(session, c.key), reverse=True)
            else:
                shift = next(self._rotation) % len(candidates)
                candidates = candidates[shift:] + candidates[:shift]
        now = time.monotonic()
        healthy = [c for c in candidates if self._cooling_until.get(c.key, 0.0) <= now]
        cooling = [c for c in candidates if self._cooling_until.get(c.key, 0.0) > now]
        return healthy + cooling

    def is_cooling(self, candidate: Candidate) -> bool:
        return self._cooling_until.get(candidate.key, 0.0) > time.monotonic()

    def retry_after(self, candidates: list[Candidate]) -> int:
        now = time.monotonic()
        waits = [self._cooling_until.get(c.key, 0.0) - now for c in candidates]
        return max(1, int(min(waits, default=1.0) + 0.999))

    def fail(
        self, candidate: Candidate, *, rate_limited: bool, retry_after: float | None = None, error: str = ""
    ) -> None:
        """Record a failure. An upstream 429 cools the deployment at once (for its Retry-After if given);
        other failures (5xx, connection errors) only after `FAILURES_BEFORE_COOLDOWN` in a row, so one
        transient error does not take a single-deployment model offline."""
        failures = self._failures.get(candidate.key, 0) + 1
        self._failures[candidate.key] = failures
        recent = self._errors.setdefault(candidate.key, deque(maxlen=RECENT_ERRORS))
        recent.appendleft(DeploymentError(now_ms(), error[:300] or ("rate limited" if rate_limited else "failed")))
        if not rate_limited and failures < FAILURES_BEFORE_COOLDOWN:
            return
        seconds = min(retry_after if retry_after and retry_after > 0 else self._cooldown_seconds, 600.0)
        self._cooling_until[candidate.key] = time.monotonic() + seconds
        labels = deployment_labels(candidate.key)
        DEPLOYMENT_COOLDOWNS.labels(*labels).inc()
        DEPLOYMENT_COOLDOWN_UNTIL.labels(*labels).set(time.time() + seconds)
        if self._listener is not None and not rate_limited and self._told.get(candidate.key) is not False:
            self._told[candidate.key] = False
            self._listener(DeploymentChange(candidate.key, True, failures, seconds, recent[0].message))

    def succeed(self, candidate: Candidate) -> None:
        if self._failures:
            self._failures.pop(candidate.key, None)
        if self._cooling_until and self._cooling_until.pop(candidate.key, None) is not None:
            DEPLOYMENT_COOLDOWN_UNTIL.labels(*deployment_labels(candidate.key)).set(0)
        if self._listener is not None and self._told.get(candidate.key) is not True:
            # Also the first success since this process started: another process may have reported it down.
            self._told[candidate.key] = True
            self._listener(DeploymentChange(candidate.key, False, 0, 0.0, None))

    def health(self) -> dict[str, DeploymentHealth]:
        now = time.monotonic()
        keys = set(self._failures) | set(self._cooling_until) | set(self._errors)
        return {
            key: DeploymentHealth(
                key=key,
                consecutive_failures=self._failures.get(key, 0),
                cooling_seconds=max(0.0, self._cooling_until.get(key, 0.0) - now),
                recent_errors=tuple(self._errors.get(key, ())),
            )
            for key in keys
        }


def _rank(session: str, key: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{session}|{key}".encode(), digest_size=8).digest(), "big")
