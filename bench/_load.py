"""A lean closed-loop load generator: N workers on one aiohttp session, each sending its next request as
soon as the previous one has been read to the end.

The same code drives direct calls and calls through the gateway, so the client's own cost (it shares the
machine's two cores with both servers) weighs on both sides of every ratio alike.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp


@dataclass(frozen=True)
class Target:
    """One kind of request: where it goes, with what, and how to tell that the answer was complete."""

    url: str
    headers: dict[str, str]
    body: bytes
    stream: bool
    complete: Callable[[bytes], bool]
    method: str = "POST"  # GET sends no body


@dataclass
class Sample:
    latencies: list[float] = field(default_factory=list)  # seconds, to the last byte
    first_bytes: list[float] = field(default_factory=list)  # seconds, streams only
    errors: int = 0
    first_error: str | None = None
    elapsed: float = 0.0
    client_cpu: float = 0.0

    @property
    def count(self) -> int:
        return len(self.latencies)


async def _one(session: aiohttp.ClientSession, target: Target, sample: Sample, record: bool) -> None:
    started = time.perf_counter()
    first: float | None = None
    try:
        body = target.body if target.method != "GET" else None
        async with session.request(target.method, target.url, data=body, headers=target.headers) as response:
            if target.stream:
                parts = []
                async for chunk in response.content.iter_any():
                    if first is None:
                        first = time.perf_counter()
                    parts.append(chunk)
                payload = b"".join(parts)
            else:
                payload = await response.read()
            ok = response.status == 200 and target.complete(payload)
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        ok, payload = False, repr(exc).encode()
    ended = time.perf_counter()
    if not record:
        return
    if not ok:
        sample.errors += 1
        if sample.first_error is None:
            sample.first_error = payload[:300].decode(errors="replace")
        return
    sample.latencies.append(ended - started)
    if first is not None:
        sample.first_bytes.append(first - started)


async def run(
    session: aiohttp.ClientSession,
    target: Target,
    *,
    concurrency: int,
    seconds: float,
    warmup: float,
    max_requests: int | None = None,
    on_window: Callable[[bool], None] | None = None,
) -> Sample:
    """Load for `warmup` seconds (not recorded), then for `seconds` (or `max_requests`), recorded.

    `on_window(True)` is called when the recorded window opens and `on_window(False)` once every request
    started in it has finished, so the caller can read CPU counters around exactly the recorded requests.
    """
    sample = Sample()
    loop = asyncio.get_running_loop()
    recording = False
    stop_at = loop.time() + warmup
    issued = 0

    async def worker() -> None:
        nonlocal issued
        while loop.time() < stop_at and (max_requests is None or not recording or issued < max_requests):
            if recording:
                issued += 1
            await _one(session, target, sample, recording)

    if warmup > 0:
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    recording = True
    if on_window is not None:
        on_window(True)
    cpu0, t0 = time.process_time(), time.perf_counter()
    stop_at = loop.time() + seconds
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    sample.elapsed = time.perf_counter() - t0
    sample.client_cpu = time.process_time() - cpu0
    if on_window is not None:
        on_window(False)
    return sample


def new_session(concurrency: int) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(limit=max(concurrency, 1), force_close=False, keepalive_timeout=60)
    timeout = aiohttp.ClientTimeout(total=60)
    return aiohttp.ClientSession(connector=connector, timeout=timeout, auto_decompress=False)
