"""Wake-ups when a task's row may have changed, for the live status stream and `Prefer: wait`.

The row stays the truth: a waiter is only told "read the row again now". On PostgreSQL every status or
progress change sends `NOTIFY modelport_tasks, '<task id>'` in its own transaction (`rows.notify_in`),
so a process LISTENing on one connection wakes its waiters whichever process changed the row. Without
PostgreSQL but with Redis (`MODELPORT_REDIS_URL`), the process that changed a row publishes the task id on
`<redis_prefix>:task-changes` (`Settings.redis_prefix`) after its commit (`publish`) and every process
subscribes. With neither (or while the connection is down) waiters read the row every `events_poll_seconds`
(0.5 s), a bounded poll that keeps the delay under a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.media.tasks.rows import TASK_CHANNEL
from modelport.services import ServiceKey

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger("modelport.media.tasks")
TASK_CHANGES: ServiceKey[TaskChanges] = ServiceKey("task changes")
# With a live LISTEN connection the row is still read this often, in case a notification was missed
# (a reconnect): the stream never depends on notifications alone.
LISTENING_POLL_SECONDS = 5.0
RECONNECT_SECONDS = 2.0


class TaskChanges:
    def __init__(
        self, engine: AsyncEngine, *, poll_seconds: float, redis: Redis | None = None, prefix: str = "modelport"
    ) -> None:
        self._poll_seconds = poll_seconds
        url = engine.url
        self._dsn = (
            url.set(drivername="postgresql").render_as_string(hide_password=False)
            if url.get_backend_name() == "postgresql"
            else None
        )
        # Redis carries the changes only where PostgreSQL's NOTIFY does not.
        self._redis = redis if self._dsn is None else None
        self._channel = f"{prefix}:task-changes"
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._listener: asyncio.Task[None] | None = None
        self._listening = False

    @property
    def interval(self) -> float:
        """How long a waiter waits before reading the row anyway."""
        return LISTENING_POLL_SECONDS if self._listening else self._poll_seconds

    def changed(self, task_id: str) -> None:
        """Wake this process's waiters of `task_id`."""
        for event in self._waiters.get(task_id, ()):
            event.set()

    async def publish(self, task_id: str) -> None:
        """After a committed change of `task_id`: wake this process's waiters and, over Redis, the other
        processes' (on PostgreSQL the transaction's NOTIFY already did)."""
        self.changed(task_id)
        if self._redis is not None:
            try:
                await self._redis.publish(self._channel, task_id)
            except Exception:
                log.warning("task change not published to Redis; other processes read the row within a second")

    async def wait(self, task_id: str, at_most: float) -> None:
        """Return when `task_id` may have changed, or after `at_most` (capped at `interval`) seconds."""
        self._ensure_listener()
        event = asyncio.Event()
        self._waiters.setdefault(task_id, set()).add(event)
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, min(at_most, self.interval))):
                    await event.wait()
        finally:
            waiters = self._waiters.get(task_id)
            if waiters is not None:
                waiters.discard(event)
                if not waiters:
                    del self._waiters[task_id]

    def _ensure_listener(self) -> None:
        """Started with the first waiter: a process nobody watches a task on holds no extra connection."""
        if self._listener is not None:
            return
        if self._dsn is not None:
            self._listener = asyncio.create_task(self._listen(self._dsn))
        elif self._redis is not None:
            self._listener = asyncio.create_task(self._subscribe(self._redis))

    async def _subscribe(self, redis: Redis) -> None:
        while True:
            pubsub = redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self._channel)
                self._listening = True
                async for message in pubsub.listen():
                    data = message.get("data")
                    if isinstance(data, bytes | str):
                        self.changed(data.decode() if isinstance(data, bytes) else data)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("task change subscription: Redis failed; polling rows until it is back")
            finally:
                self._listening = False
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
                self._wake_all()
            await asyncio.sleep(RECONNECT_SECONDS)

    def _wake_all(self) -> None:
        """What happened while not listening is read from the rows."""
        for waiters in list(self._waiters.values()):
            for event in waiters:
                event.set()

    async def _listen(self, dsn: str) -> None:
        import asyncpg

        def on_notify(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
            self.changed(payload)

        while True:
            conn = None
            try:
                conn = await asyncpg.connect(dsn)
                await conn.add_listener(TASK_CHANNEL, on_notify)
                self._listening = True
                closed = asyncio.Event()
                conn.add_termination_listener(functools.partial(_set, closed))
                await closed.wait()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("task change listener: connection failed; polling rows until it is back")
            finally:
                self._listening = False
                if conn is not None and not conn.is_closed():
                    with contextlib.suppress(Exception):
                        await conn.close(timeout=2)
                self._wake_all()
            await asyncio.sleep(RECONNECT_SECONDS)

    async def aclose(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
            self._listener = None


def _set(event: asyncio.Event, _conn: Any) -> None:
    event.set()
