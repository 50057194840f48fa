"""`TaskQueue`: PgQueuer in memory (one process, SQLite) or on PostgreSQL (every process and machine)."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from pgqueuer import PgQueuer, Queries
from pgqueuer.models import Job
from pgqueuer.ports import RepositoryPort
from sqlalchemy.engine import make_url

if TYPE_CHECKING:
    # asyncpg (~3 MiB) is imported where a PostgreSQL queue connects: the in-memory queue never loads it.
    import asyncpg

log = logging.getLogger("modelport.queue")

Handler = Callable[[str], Awaitable[None]]


class JobKind(enum.StrEnum):
    """What a job's id names (the PgQueuer entrypoint): a process consumes only the kinds it has a
    handler for, so a kind another process cannot run stays queued for one that can."""

    MEDIA_TASK = "media_task"
    BACKGROUND_RESPONSE = "background_response"


ENTRYPOINT = JobKind.MEDIA_TASK.value


@dataclass(frozen=True, slots=True)
class Jobs:
    """A job kind's handler and how many of its jobs this process runs at once."""

    handler: Handler
    concurrency: int


def _asyncpg_dsn(database_url: str) -> str:
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


class TaskQueue:
    """Enqueue by task id (the job's dedupe key, so enqueueing twice is harmless) and run a handler per job.

    `heartbeat_seconds` is PgQueuer's staleness threshold: a job whose worker stopped beating for that long
    is picked again by another worker (PostgreSQL).
    """

    def __init__(self, database_url: str, *, heartbeat_seconds: float) -> None:
        self.in_memory = make_url(database_url).get_backend_name() != "postgresql"
        self._dsn = None if self.in_memory else _asyncpg_dsn(database_url)
        self._heartbeat = timedelta(seconds=heartbeat_seconds)
        self._memory = PgQueuer.in_memory() if self.in_memory else None
        self._pool: asyncpg.Pool | None = None
        self._pool_lock = asyncio.Lock()
        self._consumer: PgQueuer | None = None
        self._consumer_conn: asyncpg.Connection | None = None

    @property
    def kind(self) -> str:  # for the log: which queue this is (glossary: "backend" is the public settings' word)
        return "pgqueuer-in-memory" if self.in_memory else "pgqueuer-postgresql"

    async def _queries(self) -> RepositoryPort:
        if self._memory is not None:
            assert self._memory.queries is not None
            return self._memory.queries
        import asyncpg
        from pgqueuer.adapters.drivers.asyncpg import AsyncpgPoolDriver

        async with self._pool_lock:
            if self._pool is None:
                assert self._dsn is not None
                self._pool = await asyncpg.create_pool(self._dsn, min_size=1, max_size=4)
        return Queries(AsyncpgPoolDriver(self._pool))

    async def enqueue(self, task_ids: list[str], kind: JobKind = JobKind.MEDIA_TASK) -> None:
        """Queue each task once: an id already queued or being worked on is skipped."""
        if not task_ids:
            return
        queries = await self._queries()
        await queries.enqueue(
            [kind.value] * len(task_ids),
            [t.encode() for t in task_ids],
            [0] * len(task_ids),
            dedupe_key=list[str | None](task_ids),
            on_conflict="skip",
        )

    async def run(
        self,
        handler: Handler,
        *,
        concurrency: int,
        stop: asyncio.Event,
        others: Mapping[JobKind, Jobs] | None = None,
    ) -> None:
        """Consume jobs until `stop` is set: media tasks by `handler`, at most `concurrency` at a time in
        this process, and the `others` kinds by theirs (each kind its own bound)."""
        if self._memory is not None:
            consumer = self._memory
        else:
            import asyncpg

            assert self._dsn is not None
            self._consumer_conn = await asyncpg.connect(self._dsn)
            consumer = PgQueuer.from_asyncpg_connection(self._consumer_conn)
        self._consumer = consumer
        kinds = {JobKind.MEDIA_TASK: Jobs(handler, concurrency), **(others or {})}
        for kind, jobs in kinds.items():
            self._register(consumer, kind, jobs)
        consumer.shutdown.clear()

        waiter = asyncio.create_task(stop.wait())
        consuming = asyncio.create_task(
            consumer.run(
                dequeue_timeout=timedelta(seconds=5),
                batch_size=1,
                max_concurrent_tasks=max(2, sum(jobs.concurrency for jobs in kinds.values())),
                heartbeat_timeout=self._heartbeat,
            )
        )
        try:
            await asyncio.wait({waiter, consuming}, return_when=asyncio.FIRST_COMPLETED)
            if consuming.done():
                consuming.result()  # a consumer that died on its own is an error worth raising
        finally:
            consumer.shutdown.set()
            waiter.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(consuming, timeout=10)
            if self._consumer_conn is not None:
                with contextlib.suppress(Exception):
                    await self._consumer_conn.close()
                self._consumer_conn = None

    def _register(self, consumer: PgQueuer, kind: JobKind, jobs: Jobs) -> None:
        # PgQueuer's own cap cannot go below 2 (twice the batch size); ours is exact, per kind.
        slots = asyncio.Semaphore(jobs.concurrency)

        async def _job(job: Job) -> None:
            job_id = (job.payload or b"").decode()
            try:
                async with slots:
                    await jobs.handler(job_id)
            except Exception:
                # The row decides what happens next (retry by the reconciler, or the deadline); the job
                # itself is done either way.
                log.exception("%s %s: handler failed", kind.value, job_id)

        # The in-memory queue outlives a consumer restart: register once.
        if kind.value not in consumer.qm.entrypoint_registry:
            consumer.entrypoint(kind.value)(_job)

    async def aclose(self) -> None:
        if self._pool is not None:
            with contextlib.suppress(Exception):
                await self._pool.close()
            self._pool = None


def build_queue(database_url: str, *, heartbeat_seconds: float) -> TaskQueue:
    return TaskQueue(database_url, heartbeat_seconds=heartbeat_seconds)


__all__ = ["ENTRYPOINT", "Handler", "JobKind", "Jobs", "TaskQueue", "build_queue"]
