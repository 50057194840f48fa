"""Each text deployment's health as this process sees it, for `GET /admin/v1/upstreams`.

States: `healthy` (in rotation), `cooling` (left out until `cooling_until`), `half_open` (the cooldown is
over: one request at a time until one succeeds). Times are UNIX seconds; with Redis the cooldowns are every
process's (`shared_health.py`), the failure counts and errors this process's own.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from modelport.catalog_spec import TextModel
from modelport.upstreams.health import DeploymentHealth


def deployment_states(
    models: Iterable[TextModel], health: Mapping[str, DeploymentHealth], next_probe: Mapping[str, float]
) -> list[dict[str, Any]]:
    wall, mono = time.time(), time.monotonic()
    states = []
    for model in sorted(models, key=lambda m: m.id):
        for index, deployment in enumerate(model.deployments):
            key = f"{model.id}#{index}"
            h = health.get(key)
            cooling = h is not None and h.cooling_seconds > 0
            probe_at = next_probe.get(key)
            states.append(
                {
                    "deployment": key,
                    "model": model.id,
                    "name": deployment.name,
                    "kind": deployment.kind,
                    "weight": deployment.weight,
                    "state": "cooling" if cooling else "half_open" if h is not None and h.half_open else "healthy",
                    "cooling_until": round(wall + h.cooling_seconds, 3) if h is not None and cooling else None,
                    "cooldown_seconds": h.cooldown_seconds if h is not None and h.cooldown_seconds else None,
                    "failures_in_window": h.consecutive_failures if h is not None else 0,
                    "last_errors": [{"at_ms": e.at_ms, "message": e.message} for e in (h.recent_errors if h else ())],
                    "probe": deployment.probe,
                    "next_probe_at": round(wall + probe_at - mono, 3) if probe_at is not None else None,
                }
            )
    return states
