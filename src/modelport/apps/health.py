"""`GET /healthz` (the process is alive) and `GET /readyz` (it can serve) on both hosts, unauthenticated.

Readiness checks what a request needs: the database answers, the schema is at the migrations' head, Redis
answers (when configured) and the file store answers. The checks run concurrently, each bounded by
CHECK_TIMEOUT, and a result is reused for CACHE_SECONDS so aggressive probes stay cheap. While `serve`
drains after SIGTERM readiness is 503 at once (never cached), so load balancers stop sending new work.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel
from sqlalchemy import text
from starlette.requests import Request
from starlette.responses import Response

from modelport.media.files.service import FILES
from modelport.services import ServiceKey, Services
from modelport.storage.schema_version import schema_state
from modelport.web.deps import get_services
from modelport.web.envelope import JSONBytesResponse

CHECK_TIMEOUT = 2.0
CACHE_SECONDS = 1.0
HEALTH_PATHS = frozenset({"/healthz", "/readyz"})
# Never a real object: HEAD of a missing key proves the store answers without reading anything.
_PROBE_KEY = "readyz-probe"

CheckResult = Literal["ok", "unreachable", "timeout", "behind", "ahead", "not configured"]
# Results that count as ready: `ahead` is an older process during a rolling upgrade (the schema only grew).
PASSING = frozenset({"ok", "ahead", "not configured"})


class Liveness(BaseModel):
    status: Literal["alive"]


class Readiness(BaseModel):
    """`checks`: one entry per dependency: `ok`, `unreachable`, `timeout`, `behind` (migrations not
    applied: run `modelport migrate`), `ahead` (a newer version migrated the database: passes) or
    `not configured` (Redis without MODELPORT_REDIS_URL)."""

    status: Literal["ready", "not ready", "draining"]
    checks: dict[str, CheckResult]


router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Liveness, summary="The process is alive")
async def healthz() -> Response:
    return JSONBytesResponse({"status": "alive"})


@router.get(
    "/readyz",
    response_model=Readiness,
    summary="The process can serve: database, migrations, Redis, file store",
    responses={503: {"model": Readiness, "description": "Not ready, or draining after SIGTERM"}},
)
async def readyz(request: Request) -> Response:
    services = get_services(request)
    checks = await services[READINESS].run()
    if services.draining:
        return JSONBytesResponse({"status": "draining", "checks": checks}, status_code=503)
    ready = all(v in PASSING for v in checks.values())
    return JSONBytesResponse(
        {"status": "ready" if ready else "not ready", "checks": checks}, status_code=200 if ready else 503
    )


class ReadinessChecker:
    def __init__(self, services: Services) -> None:
        self._services = services
        self._cached: tuple[float, dict[str, CheckResult]] | None = None
        self._lock = asyncio.Lock()

    async def run(self) -> dict[str, CheckResult]:
        async with self._lock:  # concurrent probes share one round of checks
            now = time.monotonic()
            if self._cached is not None and now - self._cached[0] < CACHE_SECONDS:
                return self._cached[1]
            results = await self._check_all()
            self._cached = (time.monotonic(), results)
            return results

    async def _check_all(self) -> dict[str, CheckResult]:
        services = self._services
        names = ["database", "migrations", "storage"]
        checks: list[Callable[[], Awaitable[CheckResult]]] = [self._database, self._migrations, self._storage]
        if services.redis is not None:
            names.append("redis")
            checks.append(self._redis)
        outcomes = await asyncio.gather(*(_bounded(check) for check in checks))
        results: dict[str, CheckResult] = dict(zip(names, outcomes, strict=True))
        if services.redis is None:
            results["redis"] = "not configured"
        if results["database"] != "ok":
            results["migrations"] = results["database"]
        return results

    async def _database(self) -> CheckResult:
        async with self._services.db.connect() as conn:
            await conn.execute(text("SELECT 1"))
        return "ok"

    async def _migrations(self) -> CheckResult:
        state = await schema_state(self._services.db)
        return "ok" if state == "current" else state

    async def _redis(self) -> CheckResult:
        assert self._services.redis is not None
        await self._services.redis.ping()
        return "ok"

    async def _storage(self) -> CheckResult:
        await self._services[FILES].store.exists(_PROBE_KEY)
        return "ok"


READINESS: ServiceKey[ReadinessChecker] = ServiceKey("readiness")


async def _bounded(check: Callable[[], Awaitable[CheckResult]]) -> CheckResult:
    try:
        return await asyncio.wait_for(check(), CHECK_TIMEOUT)
    except TimeoutError:
        return "timeout"
    except Exception:
        return "unreachable"
