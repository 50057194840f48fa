"""Deployment cooldowns shared by every process and machine through Redis (when configured).

Failures are counted in one window for every process (a sorted set per deployment,
`<prefix>:deployment-failures:<key>`): the process whose failure fills it enters the cooldown. A process
that takes a deployment out of rotation (or sees one serve again) tells the others at once: a
key per cooling deployment (`<prefix>:deployment-cooldown:<key>`, its end as UNIX time, expiring with it)
for processes that start later, and a message on `<prefix>:deployment-health` for those running. Each
applies what it hears to its own router (`DeploymentRouter.cool` / `recovered`, not told back). Without it
(or while Redis is down) each process keeps its own view: a cooldown is an optimisation, never needed for
correctness, so a Redis failure is logged and the request goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import secrets
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

import orjson

from modelport.gateway.routing import DeploymentRouter
from modelport.services import ServiceKey

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger("modelport.gateway.shared_health")
RECONNECT_SECONDS = 1.0
SHARED_HEALTH: ServiceKey[SharedHealth] = ServiceKey("shared deployment health")


class SharedHealth:
    def __init__(self, redis: Redis, prefix: str, router: DeploymentRouter) -> None:
        self._redis = redis
        self._router = router
        self._channel = f"{prefix}:deployment-health"
        self._keys = f"{prefix}:deployment-cooldown:"
        self._failures = f"{prefix}:deployment-failures:"  # a sorted set per deployment: every process's
        self._sequence = itertools.count()
        self._origin = secrets.token_hex(8)  # this process: its own messages are not applied twice
        self._pending: set[asyncio.Task[None]] = set()
        self._listener: asyncio.Task[None] | None = None
        router.on_change = self.changed
        router.on_fail = self.failed

    def changed(self, key: str, seconds: float) -> None:
        """Told by the router on the request's path: only queues the write."""
        self._spawn(self._publish(key, seconds))

    def failed(self, key: str) -> None:
        """A failure that did not cool the deployment in this process: counted in the shared window."""
        self._spawn(self._count(key))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _count(self, key: str) -> None:
        routing = self._router.routing
        now = time.time()
        name = self._failures + key
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.zadd(name, {f"{self._origin}:{next(self._sequence)}": now})
                pipe.zremrangebyscore(name, 0, now - routing.failure_window_seconds)
                pipe.zcard(name)
                pipe.pexpire(name, int(routing.failure_window_seconds * 1000) + 1000)
                results = await pipe.execute()
        except Exception:
            log.warning("a deployment failure not counted in Redis; this process counts its own")
            return
        if int(results[2]) >= routing.failures_before_cooldown:
            self._router.window_full(key)

    async def _publish(self, key: str, seconds: float) -> None:
        until = time.time() + seconds if seconds > 0 else 0.0
        message = orjson.dumps({"origin": self._origin, "key": key, "until": until})
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                if seconds > 0:
                    pipe.set(self._keys + key, repr(until), px=max(1, int(seconds * 1000)))
                    pipe.delete(self._failures + key)  # the window starts again after a cooldown
                else:
                    pipe.delete(self._keys + key)
                pipe.publish(self._channel, message)
                await pipe.execute()
        except Exception:
            log.warning("deployment health not shared through Redis; this process keeps its own view")

    async def start(self) -> None:
        self._listener = asyncio.create_task(self._subscribe())

    async def aclose(self) -> None:
        for task in (self._listener, *self._pending):
            if task is not None:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    async def _load(self) -> None:
        """The cooldowns other processes entered before this one listened."""
        async for name in self._redis.scan_iter(match=self._keys + "*", count=200):
            value = await self._redis.get(name)
            text = name.decode() if isinstance(name, bytes) else str(name)
            if value is not None:
                self._apply(text.removeprefix(self._keys), float(value))

    async def _subscribe(self) -> None:
        while True:
            pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self._channel)
                await self._load()
                async for message in pubsub.listen():
                    self._heard(message.get("data"))
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("deployment health subscription: Redis failed; retrying")
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
            await asyncio.sleep(RECONNECT_SECONDS)

    def _heard(self, data: Any) -> None:
        try:
            message = orjson.loads(data)
            if message["origin"] != self._origin:
                self._apply(str(message["key"]), float(message["until"]))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            log.warning("an unreadable deployment health message on %s", self._channel)

    def _apply(self, key: str, until: float) -> None:
        seconds = until - time.time()
        if seconds > 0:
            self._router.cool(key, seconds, shared=False)
        else:
            self._router.recovered(key, shared=False)
