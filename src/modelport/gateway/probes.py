"""Health probes: a cooling deployment with `probe = "models"` is brought back without user traffic.

While a deployment is cooling down (for any reason, an upstream 429 included) or half-open, the prober
calls its kind's model list with its key every `probe_seconds` (`GET {base_url}/models`, Anthropic's
`/v1/models`: free at every provider; no completion is ever sent as a probe). A 200 puts it back in
rotation (`DeploymentRouter.probed`, which also tells the operator alerts `deployment.up` and, with Redis,
every other process). Each process probes what it sees cooling; the probes are cheap and rare.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import aiohttp

from modelport.catalog import CatalogStore
from modelport.catalog_spec import Deployment
from modelport.gateway.routing import DeploymentRouter
from modelport.services import ServiceKey
from modelport.upstreams.kinds import auth_headers, models_url
from modelport.upstreams.pool import UpstreamPool

log = logging.getLogger("modelport.gateway.probes")
TICK_SECONDS = 0.25
PROBE_TIMEOUT = aiohttp.ClientTimeout(total=10)
PROBES: ServiceKey[DeploymentProber] = ServiceKey("deployment probes")


class DeploymentProber:
    def __init__(self, catalog: CatalogStore, router: DeploymentRouter, pool: UpstreamPool) -> None:
        self._catalog = catalog
        self._router = router
        self._pool = pool
        self._task: asyncio.Task[None] | None = None
        self._session: aiohttp.ClientSession | None = None
        # Set when a deployment starts cooling: the prober sleeps (costs nothing) while every one is healthy.
        self._wake = asyncio.Event()
        router.on_cool = self._wake.set
        # The monotonic time of each probing deployment's next probe, by key (the console shows it).
        self.next_probe: dict[str, float] = {}

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        if self._session is not None:
            await self._session.close()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while True:
                try:
                    if not await self._tick():
                        break  # nothing is cooling or half-open: sleep until something cools
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("deployment probes failed; trying again")
                await asyncio.sleep(TICK_SECONDS)

    async def _tick(self) -> bool:
        """Probe what is due; False when no deployment with a probe is out of rotation."""
        out = {key for key, h in self._router.health().items() if h.cooling_seconds > 0 or h.half_open}
        if not out:
            self.next_probe.clear()
            return False
        snapshot = await self._catalog.get()
        now = time.monotonic()
        for model in snapshot.text.values():
            for index, deployment in enumerate(model.deployments):
                key = f"{model.id}#{index}"
                if deployment.probe is None or key not in out or deployment.kind == "local":
                    self.next_probe.pop(key, None)
                    continue
                due = self.next_probe.setdefault(key, now + deployment.probe_seconds)
                if due <= now:
                    self.next_probe[key] = now + deployment.probe_seconds
                    if await self._probe(deployment):
                        self.next_probe.pop(key, None)
                        self._router.probed(key)
        return bool(self.next_probe)  # a probing deployment is still out

    async def _probe(self, deployment: Deployment) -> bool:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=PROBE_TIMEOUT, trust_env=False)
        headers = {**deployment.headers, **auth_headers(deployment, self._pool.api_key(deployment))}
        try:
            async with self._session.get(models_url(deployment), headers=headers) as response:
                return response.status == 200
        except (aiohttp.ClientError, TimeoutError, OSError):
            return False
