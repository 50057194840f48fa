"""Which deployment serves a request: catalog lookup, order, session affinity and cooldowns.

Order: with a session id, rendezvous hashing ranks the deployments, so a session stays on one deployment
for as long as it is healthy and moves only if that one fails (no shared state needed: every process and
machine computes the same ranking). Without one, a rotating start spreads load, shaped by each
deployment's `weight`. Deployments cooling down are tried last (and only if the attempt loop admits them).

Health (docs/api/routing.md): a deployment cools down after `failures_before_cooldown` failures within
`failure_window_seconds`, successes in between or not (an upstream 429 at once, for its Retry-After), for
the base cooldown; failures while it is cooling are not counted, and the window starts again when it
comes back; when it
ends the deployment is half-open: one request at a time (per process) until one succeeds, and a failure
then doubles the next cooldown, up to `max_cooldown_seconds`. With Redis the failure window and the
cooldowns entered and ended are shared by every process (`shared_health.SharedHealth`, told through
`on_fail` and `on_change`); without it each process keeps its own. A listener (the operator alerts)
hears when a deployment goes down (a cooldown after failures; an upstream 429 is not "down") and when
it serves again; the alerts decide across processes which change is news.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from modelport.catalog_spec import Deployment, TextModel
from modelport.clock import now_ms
from modelport.metrics import DEPLOYMENT_COOLDOWN_UNTIL, DEPLOYMENT_COOLDOWNS, deployment_labels
from modelport.settings import RoutingSettings
from modelport.upstreams.health import (
    RECENT_ERRORS,
    DeploymentChange,
    DeploymentError,
    DeploymentHealth,
    HealthListener,
)

DEFAULT_COOLDOWN_SECONDS = 30.0
FAILURES_BEFORE_COOLDOWN = 3

# Told when this process enters a cooldown (the deployment's key, its seconds) or sees a deployment that was
# cooling or half-open serve again (seconds 0): the cross-process share (`shared_health.SharedHealth`).
CooldownShare = Callable[[str, float], None]


@dataclass(frozen=True, slots=True)
class Candidate:
    key: str
    deployment: Deployment
    # The catalog model the deployment serves (a fallback model's, in a request for another); None in
    # candidates made by hand (tests): the request's model.
    model: TextModel | None = None
    # A context fallback's: tried only for a request over the requested model's context window.
    context_only: bool = False


@dataclass(slots=True)
class _Health:
    """One deployment's health in this process (absent: healthy, nothing to report)."""

    failures: deque[float] = field(default_factory=deque)  # monotonic times, within the window
    errors: deque[DeploymentError] = field(default_factory=lambda: deque(maxlen=RECENT_ERRORS))
    cooling_until: float = 0.0  # monotonic
    cooldown: float = 0.0  # the latest cooldown's length, doubled by a failure while half-open
    half_open: bool = False  # a cooldown ended and nothing has succeeded since
    trial: bool = False  # the one half-open request of this process is in flight


class DeploymentRouter:
    def __init__(
        self,
        *,
        cooldown_seconds: float = DEFAULT_COOLDOWN_SECONDS,
        routing: RoutingSettings | None = None,
        listener: HealthListener | None = None,
    ) -> None:
        self.routing = routing or RoutingSettings()
        self._cooldown_seconds = cooldown_seconds
        self._listener = listener
        self.on_change: CooldownShare | None = None
        # Told whenever a deployment starts cooling (here or heard from another process): wakes the prober.
        self.on_cool: Callable[[], None] | None = None
        # Told of each failure that did not cool the deployment here: the shared window counts it.
        self.on_fail: Callable[[str], None] | None = None
        # What the listener was last told per deployment: True serving, False down (absent: nothing yet).
        self._told: dict[str, bool] = {}
        self._health: dict[str, _Health] = {}
        self._rotation = itertools.count()

    def plan(self, model: TextModel, session: str | None, *, context_only: bool = False) -> list[Candidate]:
        candidates = [Candidate(f"{model.id}#{i}", d, model, context_only) for i, d in enumerate(model.deployments)]
        if len(candidates) > 1:
            if session:
                candidates.sort(key=lambda c: _rank(session, c.key), reverse=True)
            else:
                shift = _weighted_start(model.deployments, next(self._rotation))
                candidates = candidates[shift:] + candidates[:shift]
            if self._health:
                now = time.monotonic()
                healthy = [c for c in candidates if not self._cooling(c.key, now)]
                if len(healthy) < len(candidates):
                    candidates = healthy + [c for c in candidates if self._cooling(c.key, now)]
        return candidates

    def _cooling(self, key: str, now: float) -> bool:
        health = self._health.get(key)
        return health is not None and health.cooling_until > now

    def is_cooling(self, candidate: Candidate) -> bool:
        return self._cooling(candidate.key, time.monotonic())

    def admit(self, candidate: Candidate) -> bool:
        """May the deployment be sent a request now: not cooling, and when half-open only if this process
        has no other half-open request to it in flight (`release` ends it)."""
        health = self._health.get(candidate.key)
        if health is None:
            return True
        if health.cooling_until > time.monotonic():
            return False
        if health.half_open:
            if health.trial:
                return False
            health.trial = True
        return True

    def by_return(self, candidates: list[Candidate]) -> list[Candidate]:
        """`candidates`, the one whose cooldown ends first first (half-open ones: now)."""

        def left(c: Candidate) -> float:
            health = self._health.get(c.key)
            return health.cooling_until if health is not None else 0.0

        return sorted(candidates, key=left)

    def release(self, candidate: Candidate) -> None:
        """The admitted request's attempt is over (answered, failed or cancelled)."""
        health = self._health.get(candidate.key)
        if health is not None:
            health.trial = False

    def retry_after(self, candidates: list[Candidate]) -> int:
        now = time.monotonic()
        waits = [h.cooling_until - now for c in candidates if (h := self._health.get(c.key)) is not None]
        return max(1, int(min(waits, default=1.0) + 0.999))

    def fail(
        self, candidate: Candidate, *, rate_limited: bool, retry_after: float | None = None, error: str = ""
    ) -> None:
        """Record a failure. An upstream 429 cools the deployment at once (for its Retry-After if given);
        other failures (5xx, connection errors, a broken answer) after `failures_before_cooldown` within
        the window, so one transient error does not take a single-deployment model offline; a failure
        while half-open at once, for twice the last cooldown."""
        key = candidate.key
        health = self._health.get(key)
        if health is None:
            health = self._health[key] = _Health()
        now = time.monotonic()
        health.errors.appendleft(
            DeploymentError(now_ms(), error[:300] or ("rate limited" if rate_limited else "failed"))
        )
        if health.cooling_until > now:
            return  # a request admitted before the cooldown: it is cooling already (not counted, as in Redis)
        failures = health.failures
        failures.append(now)
        horizon = now - self.routing.failure_window_seconds
        while failures and failures[0] < horizon:
            failures.popleft()
        ceiling = self.routing.max_cooldown_seconds
        if rate_limited and retry_after and retry_after > 0:
            seconds = retry_after
        elif health.half_open:
            seconds = max(health.cooldown, self._cooldown_seconds) * 2
        elif rate_limited or len(failures) >= self.routing.failures_before_cooldown:
            seconds = self._cooldown_seconds
        else:
            if self.on_fail is not None:
                self.on_fail(key)
            return
        counted = len(failures)
        self.cool(key, min(seconds, ceiling))
        if self._listener is not None and not rate_limited and self._told.get(key) is not False:
            self._told[key] = False
            self._listener(DeploymentChange(key, True, counted, min(seconds, ceiling), health.errors[0].message))

    def window_full(self, key: str) -> None:
        """Every process's failures within the window reached the threshold (`shared_health`): cool it."""
        health = self._health.get(key)
        if health is None:
            health = self._health[key] = _Health()
        if health.cooling_until > time.monotonic():
            return
        seconds = min(self._cooldown_seconds, self.routing.max_cooldown_seconds)
        self.cool(key, seconds)
        if self._listener is not None and self._told.get(key) is not False:
            self._told[key] = False
            message = health.errors[0].message if health.errors else "failures in other processes"
            self._listener(DeploymentChange(key, True, self.routing.failures_before_cooldown, seconds, message))

    def cool(self, key: str, seconds: float, *, shared: bool = True) -> None:
        """Take the deployment out of rotation for `seconds` (`shared`: tell the other processes)."""
        health = self._health.get(key)
        if health is None:
            health = self._health[key] = _Health()
        health.cooling_until = time.monotonic() + seconds
        health.cooldown = seconds
        health.half_open = True
        health.trial = False
        labels = deployment_labels(key)
        DEPLOYMENT_COOLDOWNS.labels(*labels).inc()
        DEPLOYMENT_COOLDOWN_UNTIL.labels(*labels).set(time.time() + seconds)
        if shared and self.on_change is not None:
            self.on_change(key, seconds)
        if self.on_cool is not None:
            self.on_cool()

    def succeed(self, candidate: Candidate) -> None:
        key = candidate.key
        if self._health:
            health = self._health.get(key)
            if health is not None:
                self.recovered(key, shared=True)
        if self._listener is not None and self._told.get(key) is not True:
            # Also the first success since this process started: another process may have reported it down.
            self._told[key] = True
            self._listener(DeploymentChange(key, False, 0, 0.0, None))

    def recovered(self, key: str, *, shared: bool = True) -> None:
        """The deployment serves again (here, or in another process when not `shared`)."""
        health = self._health.get(key)
        if health is None:
            return
        was_out = health.half_open or health.cooling_until > 0
        if was_out:
            # Back from a cooldown: its window starts again (Redis deletes the shared one when the cooldown
            # begins; nothing is counted while cooling). A success otherwise leaves the window as it is:
            # N failures within it cool the deployment, successes in between or not.
            health.failures.clear()
        health.cooling_until = health.cooldown = 0.0
        health.half_open = health.trial = False
        if was_out:
            DEPLOYMENT_COOLDOWN_UNTIL.labels(*deployment_labels(key)).set(0)
            if shared and self.on_change is not None:
                self.on_change(key, 0.0)

    def probed(self, key: str) -> None:
        """A probe of the cooling deployment succeeded: back in rotation, as after a served request."""
        self.recovered(key, shared=True)
        if self._listener is not None and self._told.get(key) is not True:
            self._told[key] = True
            self._listener(DeploymentChange(key, False, 0, 0.0, None))

    def health(self) -> dict[str, DeploymentHealth]:
        now = time.monotonic()
        horizon = now - self.routing.failure_window_seconds
        return {
            key: DeploymentHealth(
                key=key,
                consecutive_failures=sum(1 for at in h.failures if at >= horizon),
                cooling_seconds=max(0.0, h.cooling_until - now),
                recent_errors=tuple(h.errors),
                half_open=h.half_open and h.cooling_until <= now,
                cooldown_seconds=h.cooldown,
            )
            for key, h in self._health.items()
        }


def _weighted_start(deployments: list[Deployment], turn: int) -> int:
    """Where this turn's rotation starts: each deployment as often as its weight (all 0: equally)."""
    weights = [d.weight for d in deployments]
    total = sum(weights)
    if total == 0 or all(w == 1 for w in weights):
        return turn % len(weights)
    position = turn % total
    for index, weight in enumerate(weights):
        if position < weight:
            return index
        position -= weight
    return 0


def _rank(session: str, key: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{session}|{key}".encode(), digest_size=8).digest(), "big")
