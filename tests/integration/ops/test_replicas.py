"""Three replicas of `modelport serve` on one PostgreSQL and one Redis behave as one system (docs/deploy.md):
a key revoked on one is refused by the others within `MODELPORT_AUTH_CACHE_SECONDS`; a key's limit changed
on one binds on the others within the same bound; a model added on one answers on the others within the
catalog snapshot's refresh (5 s); a key's spend limit holds exactly over all three; and a replica SIGKILLed
with requests in flight loses nothing: every answered request is logged and charged once, its reservations
come back, the ledger equals the balance.

The bounds are asserted with a few seconds' slack for a loaded machine, each far below what a broken
propagation would take (never: the old state stays until restart)."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import httpx
import redis

from tests.integration.keys.helpers import CHAT, COST_MICROS, admin, bearer, keys_server, new_key, new_team
from tests.integration.tasks.helpers import ledger_report, wait_for
from tests.support.databases import migrated_postgres_database
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.server import RunningServer

REDIS_URL = os.environ.get("MODELPORT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
AUTH_CACHE_SECONDS = 2.0
CATALOG_REFRESH_SECONDS = 5.0  # CatalogStore's refresh_seconds
SLACK_SECONDS = 4.0  # a loaded machine's polling and scheduling delays
USAGE = Usage(input_tokens=10, output_tokens=100)  # COST_MICROS a request


def test_three_replicas_behave_as_one(tmp_path: Path) -> None:
    async def run() -> None:
        async with migrated_postgres_database() as database_url:
            await asyncio.to_thread(_replicas, tmp_path, database_url)

    asyncio.run(run())


def _chat(server: RunningServer, key: str, model: str = "fake/chat") -> int:
    r = httpx.post(
        server.text_url + "/v1/chat/completions", json={**CHAT, "model": model}, headers=bearer(key), timeout=60
    )
    return r.status_code


def _answers(server: RunningServer, key: str, model: str, status: int) -> Callable[[], bool]:
    return lambda: _chat(server, key, model) == status


def _until(condition: Callable[[], bool], bound: float, what: str) -> float:
    """Seconds until `condition` held; fails past `bound` + slack."""
    started = time.monotonic()
    while not condition():
        assert time.monotonic() - started < bound + SLACK_SECONDS, f"{what}: not within {bound} s"
        time.sleep(0.1)
    return time.monotonic() - started


def _team_id(server: RunningServer, name: str) -> str:
    team_id: str = admin(server, "GET", f"/teams/{name}").json()["data"]["id"]
    return team_id


def _logs_total(server: RunningServer, key: str) -> int:
    now = int(time.time())
    r = httpx.get(
        server.text_url + "/v1/logs",
        params={"start_time": now - 3600, "end_time": now + 3600},
        headers=bearer(key),
        timeout=30,
    )
    assert r.status_code == 200, r.text
    total: int = r.json()["total"]
    return total


def _replicas(tmp_path: Path, database_url: str) -> None:
    redis.Redis.from_url(REDIS_URL, socket_connect_timeout=5).ping()  # fail loudly if Redis is missing
    env = {
        "MODELPORT_REDIS_URL": REDIS_URL,
        "MODELPORT_RATELIMIT_PREFIX": "mp-replicas-" + secrets.token_hex(4),
        "MODELPORT_AUTH_CACHE_SECONDS": str(AUTH_CACHE_SECONDS),
        # A dead replica's reservations come back within lease + sweep interval.
        "MODELPORT_CREDIT__LEASE_SECONDS": "2",
        "MODELPORT_CREDIT__SWEEP_INTERVAL_SECONDS": "0.5",
    }
    with FakeUpstream(Reply.text("answer", usage=USAGE)) as upstream, ExitStack() as stack:
        with ThreadPoolExecutor(max_workers=3) as pool:  # three machines starting at once
            started = [
                pool.submit(stack.enter_context, keys_server(tmp_path / name, upstream, database_url, **env))
                for name in ("a", "b", "c")
            ]
            a, b, c = (f.result() for f in started)
        new_team(a, "fleet", usd="100")
        _revocation(a, b, c)
        _limit_change(a, b, c)
        _catalog_edit(a, b, c, upstream)
        _key_budget(a, b, c)
        _kill_in_flight(a, b, c, upstream, database_url)


def _revocation(a: RunningServer, b: RunningServer, c: RunningServer) -> None:
    key, key_id = new_key(a, "fleet")
    assert [_chat(s, key) for s in (b, c)] == [200, 200]  # both caches hold the key now
    assert admin(a, "POST", f"/keys/{key_id}/revoke").status_code == 200
    assert _chat(a, key) == 401  # the revoking replica at once
    for other in (b, c):
        _until(_answers(other, key, "fake/chat", 401), AUTH_CACHE_SECONDS, "a revoked key refused by the others")


def _limit_change(a: RunningServer, b: RunningServer, c: RunningServer) -> None:
    key, key_id = new_key(a, "fleet")
    assert [_chat(s, key) for s in (b, c)] == [200, 200]
    assert admin(a, "PATCH", f"/keys/{key_id}", json={"models": ["other/*"]}).status_code == 200
    for other in (b, c):
        _until(_answers(other, key, "fake/chat", 404), AUTH_CACHE_SECONDS, "a narrowed key's models on the others")
        assert _chat(other, key, "other/chat") == 200


def _catalog_edit(a: RunningServer, b: RunningServer, c: RunningServer, upstream: FakeUpstream) -> None:
    key, _ = new_key(a, "fleet")
    assert [_chat(s, key, "added/chat") for s in (a, b, c)] == [404, 404, 404]
    spec = {
        "prices": {"input": "1", "output": "2"},
        "deployments": [
            {"kind": "openai_chat", "base_url": upstream.base_url + "/v1", "model": "up", "api_key_env": "FAKE_KEY"}
        ],
    }
    put = admin(a, "PUT", "/models/added/chat", json={"kind": "text", "spec": spec})
    assert put.status_code == 200, put.text
    assert _chat(a, key, "added/chat") == 200  # the editing replica at once
    for other in (b, c):
        _until(_answers(other, key, "added/chat", 200), CATALOG_REFRESH_SECONDS, "an added model")


def _key_budget(a: RunningServer, b: RunningServer, c: RunningServer) -> None:
    """150 concurrent requests over three replicas against a key with ten and a half requests' worth."""
    limit_micros = 10 * COST_MICROS + 105
    key, _ = new_key(a, "fleet", spend_limit_usd=f"{limit_micros / 1_000_000:.6f}", spend_limit_period="total")

    async def burst() -> list[int]:
        limits = httpx.Limits(max_connections=150, max_keepalive_connections=150)
        async with httpx.AsyncClient(timeout=120, limits=limits) as client:
            answers = await asyncio.gather(
                *(
                    client.post((a, b, c)[i % 3].text_url + "/v1/chat/completions", json=CHAT, headers=bearer(key))
                    for i in range(150)
                )
            )
        return [r.status_code for r in answers]

    codes = asyncio.run(burst())
    assert set(codes) <= {200, 402}, codes
    admitted = codes.count(200)
    assert 10 <= admitted <= 11, admitted  # the eleventh fits in the half request's worth of a slice at most

    def spend() -> dict[str, float]:
        r = httpx.get(a.media_url + "/api/v1/apikey/validate", headers=bearer(key), timeout=30)
        data: dict[str, float] = r.json()["data"]["spend"]
        return data

    wait_for(
        lambda: spend()["frozen_usd"] == 0 and spend()["spent_usd"] == admitted * COST_MICROS / 1_000_000,
        timeout=30,
        what="the key's spend settled: exactly what was admitted",
    )


def _kill_in_flight(
    a: RunningServer, b: RunningServer, c: RunningServer, upstream: FakeUpstream, database_url: str
) -> None:
    """Six requests in flight on each replica when `c` is SIGKILLed: `a`'s and `b`'s are answered, logged
    and charged once; `c`'s fail at the client and cost nothing; `c`'s reservations come back."""
    new_team(a, "crash", usd="10")
    team_id = _team_id(a, "crash")
    key, _ = new_key(a, "crash")
    before = ledger_report(database_url, team_id)
    upstream.set_default(Reply.text("slow answer", usage=USAGE, delay=3.0))
    calls = upstream.call_count()
    codes: dict[str, list[int | None]] = {"a": [], "b": [], "c": []}
    lock = threading.Lock()

    def ask(name: str, server: RunningServer) -> None:
        try:
            code: int | None = _chat(server, key)
        except httpx.HTTPError:
            code = None  # the replica died under it
        with lock:
            codes[name].append(code)

    threads = [
        threading.Thread(target=ask, args=(name, server))
        for name, server in (("a", a), ("b", b), ("c", c))
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    wait_for(lambda: upstream.call_count() - calls == 18, timeout=30, what="18 requests at the upstream")
    assert ledger_report(database_url, team_id).frozen_micros > 0  # reservations held, c's among them
    c.process.send_signal(signal.SIGKILL)
    c.process.wait(timeout=30)
    for thread in threads:
        thread.join(timeout=60)
    upstream.set_default(Reply.text("answer", usage=USAGE))
    assert codes["a"] == codes["b"] == [200] * 6, codes
    assert codes["c"] == [None] * 6, codes

    expected = before.balance_micros - 12 * COST_MICROS
    wait_for(
        lambda: (r := ledger_report(database_url, team_id)).frozen_micros == 0 and r.balance_micros == expected,
        timeout=60,
        what="the dead replica's reservations returned and the survivors' 12 charges written",
    )
    after = ledger_report(database_url, team_id)
    assert after.entries_sum == after.balance_micros == expected
    wait_for(lambda: _logs_total(a, key) == 12, timeout=30, what="12 log rows")
    assert _logs_total(b, key) == 12
    assert _chat(b, key) == 200  # the survivors carry on
