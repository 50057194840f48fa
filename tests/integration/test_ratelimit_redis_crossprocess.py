"""Two separate OS processes hammer one key on one Redis; the limit holds exactly across both.

Each process builds its limiters with `make_limiters(make_redis(url), prefix)` (the production path, Redis
server clock), waits for a common start instant so the two really overlap, fires its hits concurrently,
and prints how many were admitted. Fails, not skips, when Redis is unreachable.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

pytestmark = pytest.mark.redis

REDIS_URL = os.environ.get("MODELPORT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")

WORKER = """
import asyncio, json, sys, time
from modelport.ratelimit import make_limiters
from modelport.services import make_redis

async def main(url, prefix, mode, limit, attempts):
    client = make_redis(url)
    limiters = make_limiters(client, prefix)
    await client.ping()  # connected before the start, so the first hits do not wait on a connection
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)  # the test's "go", once both processes are ready
    started = time.time()
    if mode == "rate":
        # window of an hour: no capacity comes back while the test runs
        results = await asyncio.gather(*(limiters.rate.hit("team:1:inference", limit, 3600)
                                         for _ in range(attempts)))
        admitted = sum(d.allowed for d in results)
    else:
        results = await asyncio.gather(*(limiters.concurrency.acquire("team:1", limit, 60)
                                         for _ in range(attempts)))
        admitted = sum(lease is not None for lease in results)
    print(json.dumps({"admitted": admitted, "started": started, "ended": time.time()}))
    await limiters.aclose()
    await client.aclose()

url, prefix, mode, limit, attempts = sys.argv[1:]
asyncio.run(main(url, prefix, mode, int(limit), int(attempts)))
"""


@pytest.fixture
async def prefix() -> AsyncIterator[str]:
    client = Redis.from_url(REDIS_URL, socket_connect_timeout=3)
    try:
        await client.ping()
    except Exception as exc:
        await client.aclose()
        pytest.fail(f"Redis at {REDIS_URL} is unreachable: {exc!r}")
    name = f"mp-test-{uuid.uuid4().hex[:12]}"
    yield name
    keys = [key async for key in client.scan_iter(match=f"{name}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


def _run_two(prefix: str, mode: str, limit: int, attempts: int) -> list[dict[str, float]]:
    # A start line, not a start time: a fixed 2 s for both interpreters to start and import was not enough
    # on a loaded machine (one began after the other had ended, CI 2026-12-04).
    args = [REDIS_URL, prefix, mode, str(limit), str(attempts)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for proc in procs:
        assert proc.stdout is not None
        ready = proc.stdout.readline()  # blocks until that process has imported and connected
        assert ready == "ready\n", (ready, proc.stderr.read() if proc.stderr else "")
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        reports.append(json.loads(out))
    return reports


@pytest.mark.parametrize("mode", ["rate", "concurrency"])
async def test_two_processes_share_one_limit(prefix: str, mode: str) -> None:
    limit, attempts = 40, 150
    reports = await asyncio.to_thread(_run_two, prefix, mode, limit, attempts)
    assert sum(int(r["admitted"]) for r in reports) == limit
    # The two runs overlapped in time, so they really competed for the same key.
    assert max(r["started"] for r in reports) < min(r["ended"] for r in reports)
