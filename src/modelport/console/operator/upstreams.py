"""Upstream deployments with their health: this process's cooldowns and failures, and recent error logs.

Cooldowns are kept per process (gateway/routing.py), so the page shows what the process that served it
knows; the recent errors below come from the shared request log. Credentials never appear: a deployment's
key lives in an environment variable (its name is shown, and whether this process has it), header values
and anything in a URL's userinfo or query are masked.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.catalog_spec import Deployment
from modelport.console.deps import require_operator
from modelport.console.operator.common import MASK, masked_url, operator, page
from modelport.console.operator.queries import LogFilter, list_logs
from modelport.requestlog.record import RequestStatus
from modelport.upstreams.health import DEPLOYMENT_HEALTH, NEXT_PROBES, DeploymentHealth
from modelport.web.deps import get_services

router = APIRouter(prefix="/admin", dependencies=[Depends(require_operator)])


@dataclass(frozen=True, slots=True)
class Row:
    model_id: str
    index: int
    deployment: Deployment
    url: str
    key_env_set: bool | None  # None: the deployment names no key variable
    headers: list[str]
    health: DeploymentHealth | None
    next_probe_in: float | None  # seconds to this deployment's next probe (None: not probing now)


@router.get("/upstreams")
async def upstreams_page(request: Request) -> Response:
    services = get_services(request)
    snapshot = await operator(request).models()
    health = services[DEPLOYMENT_HEALTH].health()
    next_probe, now = services[NEXT_PROBES], time.monotonic()
    rows = [
        Row(
            model.id,
            i,
            d,
            masked_url(d.base_url),
            None if not d.api_key_env else bool(os.environ.get(d.api_key_env)),
            sorted(d.headers),
            health.get(f"{model.id}#{i}"),
            max(0.0, at - now) if (at := next_probe.get(f"{model.id}#{i}")) is not None else None,
        )
        for model in sorted(snapshot.text.values(), key=lambda m: m.id)
        for i, d in enumerate(model.deployments)
    ]
    errors = await list_logs(services.db, LogFilter(status=RequestStatus.ERROR), None)
    context = {
        "title": "Upstream deployments",
        "active": "upstreams",
        "rows": rows,
        "cooling": sum(1 for r in rows if r.health is not None and r.health.cooling_seconds > 0),
        "recent_errors": errors.rows[:20],
        "mask": MASK,
        "pid": os.getpid(),
        "routing": services.settings.routing,
    }
    return page(request, "operator/upstreams.html", context)
