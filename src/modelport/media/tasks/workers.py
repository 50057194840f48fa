"""The background side of tasks in one process: queue consumer, reconciler, webhook sender.

`serve` starts it in-process by default; `modelport worker` runs only this. Any number of processes may
run it at once against PostgreSQL: the queue spreads the jobs, the task rows' compare-and-swaps decide.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.billing import notify
from modelport.clock import now_ms
from modelport.media import idempotency
from modelport.media.tasks import scans
from modelport.media.tasks.executor import TaskExecutor
from modelport.metrics import TASK_QUEUE_AGE, TASKS_UNFINISHED
from modelport.metrics import enabled as metrics_enabled
from modelport.queue import JobKind, Jobs, TaskQueue
from modelport.services import ServiceKey
from modelport.settings import TasksSettings
from modelport.webhooks.sender import WebhookSender

log = logging.getLogger("modelport.media.tasks")
TASK_WORKERS: ServiceKey[TaskWorkers] = ServiceKey("task workers")
PRUNE_KEYS_EVERY_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class OtherJobs:
    """Another kind of job these workers run beside media tasks (background responses): its handler, and
    the reconciler's scan for the ids to queue again, `(queued_before_ms) -> ids` (lost from the queue, or
    whose run's lease ran out)."""

    kind: JobKind
    jobs: Jobs
    needing_a_run: Callable[[int], Awaitable[list[str]]]


class Reconciler:
    """Periodically: fail (and refund) tasks past their deadline; queue again the queued tasks the queue may
    have lost (in-memory queue after a restart, a crash between commit and enqueue) and the running tasks
    whose lease ran out (their worker died). Queueing is idempotent, so every process may run this.
    It also sends the team notifications of keys about to expire (`billing.notify.expiring_keys`)."""

    def __init__(
        self,
        engine: AsyncEngine,
        queue: TaskQueue,
        executor: TaskExecutor,
        settings: TasksSettings,
        others: Sequence[OtherJobs] = (),
    ) -> None:
        self._engine = engine
        self._others = others
        self._queue = queue
        self._executor = executor
        self._settings = settings
        self._next_prune = 0.0
        self._next_expiry_check = 0.0

    async def pass_once(self, *, all_queued: bool = False) -> None:
        if time.monotonic() >= self._next_prune:
            # Expired Idempotency-Keys (an expired key already counts as absent; this keeps the table small).
            self._next_prune = time.monotonic() + PRUNE_KEYS_EVERY_SECONDS
            await idempotency.prune_expired(self._engine)
        if time.monotonic() >= self._next_expiry_check:
            # Team notifications: keys about to expire (the mark of each makes it once across processes).
            self._next_expiry_check = time.monotonic() + self._settings.key_expiry_check_seconds
            try:
                await notify.expiring_keys(self._engine)
            except Exception:  # never in the way of the task work below
                log.exception(
                    "key expiry notifications failed; next check in %ss", self._settings.key_expiry_check_seconds
                )
        for task_id in await scans.past_deadline(self._engine):
            await self._executor.fail_past_deadline(task_id)
        cutoff = now_ms() - (0 if all_queued else int(self._settings.requeue_after_seconds * 1000))
        ids = await scans.needing_a_worker(self._engine, queued_before_ms=cutoff)
        if ids:
            await self._queue.enqueue(ids)
        for other in self._others:
            await self._queue.enqueue(await other.needing_a_run(cutoff), other.kind)
        for status, count in (await scans.unfinished_counts(self._engine)).items():
            TASKS_UNFINISHED.labels(status).set(count)
        if metrics_enabled():  # one more query, only where something serves /metrics
            waiting = await scans.backlog(self._engine)
            oldest = waiting.oldest_created_at_ms
            TASK_QUEUE_AGE.labels().set(0 if oldest is None else max(0, now_ms() - oldest) / 1000)

    async def run(self, stop: asyncio.Event) -> None:
        first = True
        while not stop.is_set():
            try:
                await self.pass_once(all_queued=first)
                first = False
            except Exception:
                log.exception("task reconciler pass failed")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._settings.reconcile_interval_seconds):
                    await stop.wait()


class TaskWorkers:
    def __init__(
        self,
        *,
        engine: AsyncEngine,
        queue: TaskQueue,
        executor: TaskExecutor,
        sender: WebhookSender,
        settings: TasksSettings,
        others: Sequence[OtherJobs] = (),
    ) -> None:
        self.queue = queue
        self.executor = executor
        self.sender = sender
        self._others = others
        self.reconciler = Reconciler(engine, queue, executor, settings, others)
        self._settings = settings
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self._stop.clear()
        self._tasks = [
            asyncio.create_task(self._consume()),
            asyncio.create_task(self.reconciler.run(self._stop)),
            asyncio.create_task(self.sender.run(self._stop)),
        ]
        log.info("task workers started: queue=%s concurrency=%d", self.queue.kind, self._settings.worker_concurrency)

    async def _consume(self) -> None:
        """Run the queue consumer; if it dies (e.g. its database connection dropped), start it again."""
        while not self._stop.is_set():
            try:
                await self.queue.run(
                    self.executor.handle,
                    concurrency=self._settings.worker_concurrency,
                    stop=self._stop,
                    others={other.kind: other.jobs for other in self._others},
                )
                return
            except Exception:
                log.exception("task queue consumer stopped; restarting it in 2 s")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2):
                    await self._stop.wait()

    async def aclose(self) -> None:
        self._stop.set()
        for task in self._tasks:
            try:
                await asyncio.wait_for(task, timeout=30)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()
            except Exception:
                log.exception("task worker component failed")
        self._tasks = []
        await self.executor.aclose()
