"""Closed-loop streaming load that keeps each content frame's arrival time (for `frontier_bench.py`).

`_load.run` keeps a stream's first byte and last byte; a frame gap needs every read's time, so this runs the
same loop (N workers, each opening its next stream once the previous one ended; warm-up unrecorded) and keeps,
per stream, when each of its content frames arrived (`_frontier.frame_times`, parsed when the stream ends).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import _frontier
import _load
import aiohttp


@dataclass(frozen=True)
class StreamResult:
    frames: list[float]  # arrival of content frame k, seconds after the request was sent


@dataclass
class StreamSample:
    streams: list[StreamResult] = field(default_factory=list)
    errors: int = 0
    first_error: str | None = None
    elapsed: float = 0.0


async def _one(session: aiohttp.ClientSession, target: _load.Target, sample: StreamSample, record: bool) -> None:
    reads: list[tuple[float, bytes]] = []
    started = time.perf_counter()
    try:
        async with session.post(target.url, data=target.body, headers=target.headers) as response:
            async for chunk in response.content.iter_any():
                reads.append((time.perf_counter(), chunk))
            payload = b"".join(c for _, c in reads)
            ok = response.status == 200 and target.complete(payload)
            error = None if ok else f"status {response.status}: " + payload[:300].decode(errors="replace")
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        ok, error = False, repr(exc)
    if not record:
        return
    if not ok:
        sample.errors += 1
        sample.first_error = sample.first_error or error
        return
    sample.streams.append(StreamResult([t - started for t in _frontier.frame_times(reads)]))


async def run_streams(
    session: aiohttp.ClientSession,
    target: _load.Target,
    *,
    concurrency: int,
    seconds: float,
    warmup: float,
    on_window: Callable[[bool], None] | None = None,
) -> StreamSample:
    """Streams for `warmup` seconds (not recorded), then for `seconds`, recorded (as `_load.run`)."""
    sample = StreamSample()
    loop = asyncio.get_running_loop()
    recording = False
    stop_at = loop.time() + warmup

    async def worker() -> None:
        while loop.time() < stop_at:
            await _one(session, target, sample, recording)

    if warmup > 0:
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    recording = True
    if on_window is not None:
        on_window(True)
    t0 = time.perf_counter()
    stop_at = loop.time() + seconds
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    sample.elapsed = time.perf_counter() - t0
    if on_window is not None:
        on_window(False)
    return sample
