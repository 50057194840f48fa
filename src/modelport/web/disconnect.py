"""The one disconnect watcher: a task that waits for the client's `http.disconnect` and then cancels the
task that is answering it, so work for a client that is gone stops at once (even while an upstream is
silent). Used by the text gateway while it waits for an upstream's answer and while it relays a stream."""

from __future__ import annotations

import asyncio
from types import TracebackType

from starlette.types import Receive


class DisconnectWatch:
    """``with DisconnectWatch(receive) as watch:`` — the current task is cancelled if the client hangs up
    inside the block; `watch.gone` then tells that cancellation from any other."""

    __slots__ = ("_receive", "_task", "_watcher", "gone")

    def __init__(self, receive: Receive) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._task = task
        self._receive = receive
        self._watcher: asyncio.Task[None] | None = None
        self.gone = False

    async def _watch(self) -> None:
        while (await self._receive())["type"] != "http.disconnect":
            pass
        self.gone = True
        self._task.cancel()

    def handled(self) -> None:
        """The hang-up's cancellation was handled here (the task goes on, e.g. to clean up)."""
        self._task.uncancel()

    def __enter__(self) -> DisconnectWatch:
        self._watcher = asyncio.get_running_loop().create_task(self._watch())
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        assert self._watcher is not None
        self._watcher.cancel()
