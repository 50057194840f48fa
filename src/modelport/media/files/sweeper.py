"""Background file sweeper: one asyncio task per process, removing files past their lifetime.

Several processes may sweep at once: each file's row is taken by exactly one DELETE ... RETURNING, and
only that process removes its bytes (see repository.delete_expired).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random

from modelport.media.files.service import FilesService
from modelport.services import ServiceKey

log = logging.getLogger("modelport.media.files.sweeper")
FILES_SWEEPER: ServiceKey[Sweeper] = ServiceKey("files sweeper")


class Sweeper:
    def __init__(self, service: FilesService, interval_seconds: float) -> None:
        self._service = service
        self._interval = interval_seconds
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="media-files-sweeper")

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while True:
            try:
                removed = await self._service.sweep_once()
                if removed:
                    log.info("removed %d expired media files", removed)
            except Exception:
                log.exception("media file sweep failed; retrying next interval")
            # Jitter keeps the processes of one deployment from sweeping in lockstep.
            await asyncio.sleep(self._interval * random.uniform(0.8, 1.2))
