"""The operator alerts of one process (`OPERATOR_ALERTS`, built only when `MODELPORT_OPERATOR_WEBHOOK_URL`
is set): the deployment changes its router reports, and every `alerts.check_interval_seconds` the task
backlog and the free disk space. Every process runs it; the alert state rows decide who sends."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.alerts import checks
from modelport.alerts.deployments import DeploymentAlerts
from modelport.alerts.events import OperatorEvent
from modelport.alerts.state import report
from modelport.net import FetchError, SafeFetcher
from modelport.services import ServiceKey
from modelport.settings import Settings
from modelport.upstreams.health import DeploymentChange
from modelport.webhooks.outbox import Delivery
from modelport.webhooks.sender import NoSigningSecret, SecretLookup

log = logging.getLogger("modelport.alerts")
OPERATOR_ALERTS: ServiceKey[OperatorAlerts] = ServiceKey("operator alerts")
CLOSE_SECONDS = 10.0  # at shutdown, queued deployment changes get this long to be reported


class OperatorAlerts:
    def __init__(self, engine: AsyncEngine, settings: Settings, *, url: str) -> None:
        self._engine = engine
        self._settings = settings.alerts
        self._url = url
        self._storage_paths = checks.storage_paths(settings)
        self.deployments = DeploymentAlerts(self._report)
        self._on_event: Callable[[], None] | None = None
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def heard(self, change: DeploymentChange) -> None:
        """The text gateway router's listener."""
        self.deployments.heard(change)

    def on_event(self, wake: Callable[[], None]) -> None:
        """Called after this process wrote an event (the local webhook sender looks at once)."""
        self._on_event = wake

    async def start(self) -> None:
        self._stop.clear()
        self._tasks = [
            asyncio.create_task(self.deployments.run(self._stop), name="operator alerts: deployments"),
            asyncio.create_task(self._check_loop(), name="operator alerts: checks"),
        ]
        log.info(
            "operator alerts on: backlog over %gs, storage below %d bytes or %g%% (%s), checked every %gs",
            self._settings.task_backlog_seconds,
            self._settings.storage_free_bytes,
            self._settings.storage_free_percent,
            ", ".join(map(str, self._storage_paths)) or "no local storage",
            self._settings.check_interval_seconds,
        )

    async def aclose(self) -> None:
        self._stop.set()
        for task in self._tasks:
            try:
                await asyncio.wait_for(task, CLOSE_SECONDS)
            except (TimeoutError, asyncio.CancelledError):
                log.warning("operator alerts: %s did not finish in %gs", task.get_name(), CLOSE_SECONDS)
            except Exception:
                log.exception("operator alerts: %s failed", task.get_name())
        self._tasks = []

    async def check_once(self) -> None:
        observations = [await checks.backlog(self._engine, self._settings)]
        for path in self._storage_paths:
            observations.append(await asyncio.to_thread(checks.storage, path, self._settings))
        for seen in observations:
            if seen.alerting is not None:
                await self._report(seen.key, seen.alerting, seen.event)

    async def _check_loop(self) -> None:
        while not self._stop.is_set():
            try:
                await self.check_once()
            except Exception:
                log.exception("operator alerts: check failed")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._settings.check_interval_seconds):
                    await self._stop.wait()

    async def _report(self, key: str, alerting: bool, event: OperatorEvent) -> None:
        event_id = await report(self._engine, key, alerting=alerting, event=event, url=self._url)
        if event_id is not None:
            log.warning("operator alert %s (%s): %s", event.type, key, event_id)
            if self._on_event is not None:
                self._on_event()


def with_operator_secret(teams: SecretLookup, settings: Settings) -> SecretLookup:
    """The sender's signing keys: the operator's secret for operator alerts (rows without a team), the
    team's own for every other row. Without a configured secret an alert's attempt fails (recorded)."""
    configured = settings.operator_webhook_secret
    operator = [configured.get_secret_value()] if configured is not None else []

    async def lookup(delivery: Delivery, at_ms: int) -> list[str]:
        if delivery.team_id is None:
            if not operator:
                raise NoSigningSecret("MODELPORT_OPERATOR_WEBHOOK_SECRET is not set")
            return operator
        return await teams(delivery, at_ms)

    return lookup


async def check_operator_url(settings: Settings) -> None:
    """At start-up: `MODELPORT_OPERATOR_WEBHOOK_URL` follows the rules of task webhook URLs (https, no
    userinfo, a public address unless its `host:port` is on `MODELPORT_NET__ALLOW_HOSTS`). Raises ValueError."""
    url = settings.operator_webhook_url
    if url is None:
        return
    try:
        await SafeFetcher(settings.net).check_resolved(url)
    except FetchError as exc:
        raise ValueError(f"MODELPORT_OPERATOR_WEBHOOK_URL is refused: {exc.detail}") from exc
