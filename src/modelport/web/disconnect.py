"""The one disconnect watcher: when the client hangs up, the task that is answering it is cancelled, so
work for a client that is gone stops at once (even while an upstream is silent). Used by the text gateway
while it waits for an upstream's answer and while it relays a stream.

Under our own HTTP protocol (`web.http_protocol`, what `serve` runs) the watch is a hook on the request
cycle that the protocol calls from `connection_lost`: nothing runs per request. Under any other ASGI server
(tests' in-process transports) a task waits for `http.disconnect` from `receive()` instead; a task per
request was ~3 % of a fast-path request's CPU (bench/README.md).
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any

from starlette.types import Receive

from modelport.web.http_protocol import HANG_UP_HOOK, GuardedHttpToolsProtocol


class DisconnectWatch:
    """``with DisconnectWatch(receive) as watch:`` — the current task is cancelled if the client hangs up
    inside the block; `watch.gone` then tells that cancellation from any other."""

    __slots__ = ("_cycle", "_receive", "_task", "_watcher", "gone")

    def __init__(self, receive: Receive) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        self._receive = receive
        self._watcher: asyncio.Task[None] | None = None
        self._cycle: Any = None
        self.gone = False

    def _hang_up(self) -> None:
        if not self.gone:
            self.gone = True
            self._task.cancel()

    async def _watch(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass
        self._hang_up()

    def handled(self) -> None:
        """The hang-up's cancellation was handled here (the task goes on, e.g. to clean up)."""
        self._task.uncancel()

    def __enter__(self) -> DisconnectWatch:
        cycle = _our_cycle(self._receive)
        if cycle is None:
            self._watcher = asyncio.get_running_loop().create_task(self._watch())
        elif cycle.disconnected:
            self._hang_up()  # gone already: cancelled at the block's first await, as the watcher task would
        else:
            self._cycle = cycle
            setattr(cycle, HANG_UP_HOOK, self._hang_up)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._cycle is not None:
            setattr(self._cycle, HANG_UP_HOOK, None)
            self._cycle = None
        elif self._watcher is not None:
            self._watcher.cancel()


def _our_cycle(receive: Receive) -> Any:
    """The uvicorn request cycle `receive` belongs to when our protocol serves it (None: another server)."""
    cycle = getattr(receive, "__self__", None)
    protocol = getattr(getattr(cycle, "on_response", None), "__self__", None)
    return cycle if isinstance(protocol, GuardedHttpToolsProtocol) else None
