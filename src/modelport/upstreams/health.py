"""What a process knows of its upstream deployments' health, for the operator console.

The text gateway's router keeps it (per process; cooldowns shared through Redis when configured, see
gateway/routing.py);
features above the gateway's layer read it through `DEPLOYMENT_HEALTH` without importing the gateway.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from modelport.services import ServiceKey

RECENT_ERRORS = 5


@dataclass(frozen=True, slots=True)
class DeploymentError:
    at_ms: int
    message: str


@dataclass(frozen=True, slots=True)
class DeploymentHealth:
    key: str  # `<model id>#<index in the model's deployments>`
    consecutive_failures: int  # failures within the routing failure window (the name predates the window)
    cooling_seconds: float  # 0 when the deployment is in rotation
    recent_errors: tuple[DeploymentError, ...]  # newest first, at most RECENT_ERRORS
    # The cooldown ended and nothing has succeeded since: one request at a time is let through.
    half_open: bool = False
    cooldown_seconds: float = 0.0  # the latest cooldown's length (the next failure while half-open doubles it)


@dataclass(frozen=True, slots=True)
class DeploymentChange:
    """A deployment went down (into cooldown after repeated failures) or serves again, in this process."""

    key: str
    down: bool
    consecutive_failures: int
    cooldown_seconds: float  # the cooldown it entered (0 for a recovery)
    last_error: str | None


# Told of every change the process sees, synchronously on the request's path: it must only queue the work.
HealthListener = Callable[[DeploymentChange], None]


class HealthSource(Protocol):
    def health(self) -> dict[str, DeploymentHealth]:
        """Deployments with something to report (failures, a cooldown or recent errors), by key."""
        ...


DEPLOYMENT_HEALTH: ServiceKey[HealthSource] = ServiceKey("deployment_health")
# The monotonic time of each probing deployment's next probe, by key: the prober's own dict
# (gateway/probes.py), read by the operator console, which may not import the gateway.
NEXT_PROBES: ServiceKey[dict[str, float]] = ServiceKey("next deployment probes")
