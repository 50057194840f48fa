"""The PgQueuer adapter in its in-memory mode: idempotent enqueue by task id, a cap on concurrent handlers,
and a consumer that can be stopped and started again on the same queue."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from modelport.queue import build_queue


async def wait_until(grew: asyncio.Event, done: Callable[[], bool]) -> None:
    async with asyncio.timeout(10):
        while not done():
            grew.clear()
            await grew.wait()


async def test_enqueue_is_idempotent_and_concurrency_is_capped() -> None:
    queue = build_queue("sqlite+aiosqlite:///unused.db", heartbeat_seconds=5)
    assert queue.in_memory
    seen: list[str] = []
    running = 0
    most = 0
    grew = asyncio.Event()

    async def handler(task_id: str) -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        seen.append(task_id)
        grew.set()
        await asyncio.sleep(0.05)
        running -= 1

    await queue.enqueue(["a", "b", "c", "a", "d"])
    await queue.enqueue(["a"])  # still queued: skipped
    stop = asyncio.Event()
    consumer = asyncio.create_task(queue.run(handler, concurrency=1, stop=stop))
    await wait_until(grew, lambda: len(seen) >= 4)
    await asyncio.sleep(0.2)
    stop.set()
    await consumer
    assert sorted(seen) == ["a", "b", "c", "d"] and most == 1

    # A second consumer on the same queue (a restart after a failure) still runs new jobs, and an id whose
    # job has finished can be queued again.
    await queue.enqueue(["a", "e"])
    stop = asyncio.Event()
    consumer = asyncio.create_task(queue.run(handler, concurrency=2, stop=stop))
    await wait_until(grew, lambda: len(seen) >= 6)
    stop.set()
    await consumer
    assert sorted(seen[4:]) == ["a", "e"]
    await queue.aclose()
