"""A key's spend limit holds exactly across processes: 200 concurrent requests against a key with 10
requests' worth, spread over two `modelport serve` processes on PostgreSQL + Redis, admit 10 (11 at most),
and the key's spend adds up to the charges. A limit change reaches every `--workers 2` process within the
auth cache bound."""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from pathlib import Path

import httpx
import redis

from tests.integration.keys.helpers import CHAT, COST_MICROS, admin, bearer, keys_server, new_key, new_team
from tests.support.databases import migrated_database_url
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.server import RunningServer

REDIS_URL = os.environ.get("MODELPORT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
LIMIT_MICROS = 10 * COST_MICROS + 105  # ten requests' worth and a half


def _validate(srv: RunningServer, key: str) -> dict[str, object]:
    answer = httpx.get(srv.media_url + "/api/v1/apikey/validate", headers=bearer(key), timeout=30)
    data: dict[str, object] = answer.json()["data"]
    return data


async def test_200_concurrent_requests_over_two_processes_admit_what_the_key_may_spend(tmp_path: Path) -> None:
    redis.Redis.from_url(REDIS_URL, socket_connect_timeout=5).ping()  # fail loudly if Redis is missing
    env = {"MODELPORT_REDIS_URL": REDIS_URL, "MODELPORT_RATELIMIT_PREFIX": "mp-test-" + secrets.token_hex(4)}
    with FakeUpstream(Reply.text("answer", usage=Usage(input_tokens=10, output_tokens=100), delay=0.05)) as up:
        async with migrated_database_url("postgres", tmp_path) as db_url:
            with (
                keys_server(tmp_path / "a", up, db_url, **env) as first,
                keys_server(tmp_path / "b", up, db_url, **env) as second,
            ):
                new_team(first, "budget", usd="100")  # the team could pay for thousands
                key, _ = new_key(
                    first, "budget", spend_limit_usd=f"{LIMIT_MICROS / 1_000_000:.6f}", spend_limit_period="total"
                )
                limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
                async with httpx.AsyncClient(timeout=120, limits=limits) as client:
                    responses = await asyncio.gather(
                        *(
                            client.post(
                                (first if i % 2 == 0 else second).text_url + "/v1/chat/completions",
                                json=CHAT,
                                headers=bearer(key),
                            )
                            for i in range(200)
                        )
                    )
                codes = [r.status_code for r in responses]
                assert set(codes) <= {200, 402}, codes
                admitted = codes.count(200)
                assert 10 <= admitted <= 11, admitted
                assert all(
                    r.json()["error"]["code"] == "key_budget_exceeded" for r in responses if r.status_code == 402
                )
                deadline = time.monotonic() + 30
                while True:  # settled, and the reservations' unused parts returned
                    spend = _validate(first, key)["spend"]
                    assert isinstance(spend, dict)
                    if spend["frozen_usd"] == 0 and spend["spent_usd"] == admitted * COST_MICROS / 1_000_000:
                        break
                    assert time.monotonic() < deadline, spend
                    await asyncio.sleep(0.2)
                team = admin(first, "GET", "/teams/budget").json()["data"]
                assert team["frozen_usd"] == 0


async def test_a_limit_change_reaches_every_worker_within_the_cache_bound(tmp_path: Path) -> None:
    cache_seconds = 1.0
    with FakeUpstream(Reply.text("answer", usage=Usage(input_tokens=10, output_tokens=100))) as up:
        async with migrated_database_url("sqlite", tmp_path) as db_url:
            with keys_server(
                tmp_path, up, db_url, "--workers", "2", MODELPORT_AUTH_CACHE_SECONDS=str(cache_seconds)
            ) as srv:
                new_team(srv, "changing")
                key, key_id = new_key(srv, "changing")
                async with httpx.AsyncClient(timeout=60) as client:
                    # Fresh connections spread over both workers (each accepts on the shared socket).
                    async def probe() -> set[int]:
                        codes = set()
                        for _ in range(12):
                            async with httpx.AsyncClient(timeout=60) as fresh:
                                r = await fresh.post(
                                    srv.text_url + "/v1/chat/completions", json=CHAT, headers=bearer(key)
                                )
                                codes.add(r.status_code)
                        return codes

                    assert await probe() == {200}
                    changed_at = time.monotonic()
                    assert admin(srv, "PATCH", f"/keys/{key_id}", json={"models": ["other/*"]}).status_code == 200
                    await asyncio.sleep(cache_seconds + 0.5)
                    assert await probe() == {404}, "a worker still used the old limits after the cache bound"
                    assert time.monotonic() - changed_at < 60
                    await client.aclose()
