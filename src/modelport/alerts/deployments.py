"""`deployment.down` and `deployment.up`: the text gateway's router tells this process's changes
(`upstreams.health.DeploymentChange`), synchronously on a request's path; they are queued here and
reported in order by one background task, so a request never waits on the database."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Awaitable, Callable

from modelport.alerts.events import DEPLOYMENT_DOWN, DEPLOYMENT_UP, OperatorEvent
from modelport.metrics import deployment_labels
from modelport.upstreams.health import DeploymentChange

log = logging.getLogger("modelport.alerts")
MAX_QUEUED = 1000  # changes waiting for the database; past it the newest are dropped (logged)

Report = Callable[[str, bool, OperatorEvent], Awaitable[object]]


def deployment_event(change: DeploymentChange) -> OperatorEvent:
    provider, model, index = deployment_labels(change.key)
    data: dict[str, object] = {
        "deployment": change.key,
        "model": model,
        "provider": provider,
        "index": int(index) if index.isdigit() else index,
        "process": f"{socket.gethostname()}:{os.getpid()}",
    }
    if change.down:
        data["consecutive_failures"] = change.consecutive_failures
        data["cooldown_seconds"] = change.cooldown_seconds
        data["last_error"] = change.last_error
    return OperatorEvent(DEPLOYMENT_DOWN if change.down else DEPLOYMENT_UP, data)


class DeploymentAlerts:
    def __init__(self, report: Report) -> None:
        self._report = report
        self._queue: asyncio.Queue[DeploymentChange] = asyncio.Queue(MAX_QUEUED)

    def heard(self, change: DeploymentChange) -> None:
        """The router's listener: never blocks, never raises."""
        try:
            self._queue.put_nowait(change)
        except asyncio.QueueFull:
            log.error("operator alerts: too many deployment changes waiting; %s dropped", change.key)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set() or not self._queue.empty():
            if self._queue.empty():
                getter = asyncio.ensure_future(self._queue.get())
                stopper = asyncio.ensure_future(stop.wait())
                await asyncio.wait((getter, stopper), return_when=asyncio.FIRST_COMPLETED)
                stopper.cancel()
                if not getter.done():
                    getter.cancel()
                    continue
                change = getter.result()
            else:
                change = self._queue.get_nowait()
            await self._one(change)

    async def _one(self, change: DeploymentChange) -> None:
        # A failed report is retried a few times (the database may blink); a change is never reordered.
        for attempt in range(5):
            try:
                await self._report(f"deployment:{change.key}", change.down, deployment_event(change))
                return
            except Exception:
                log.exception("operator alerts: reporting %s failed (attempt %d)", change.key, attempt + 1)
                await asyncio.sleep(min(2.0**attempt, 10.0))
