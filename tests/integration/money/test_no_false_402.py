"""Two `modelport serve` processes on one PostgreSQL database (and one Redis) share a team whose balance
covers about 20 requests: 18 requests spread over both at about 5 per second are all served. A process
must not refuse while the team's money sits unused in the other process's credit reservation."""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from pathlib import Path

import httpx
import redis

from tests.integration.money.helpers import admin, server, team_with_key, write_config
from tests.support.databases import migrated_database_url
from tests.support.fake_upstream import FakeUpstream, Reply, Usage

REDIS_URL = os.environ.get("MODELPORT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
COST_MICROS = 10 * 1 + 100 * 2  # 10 input + 100 output tokens at 1 and 2 USD per million
BALANCE_MICROS = 20 * COST_MICROS + 105


async def test_two_processes_refuse_nothing_the_team_can_pay(tmp_path: Path) -> None:
    redis.Redis.from_url(REDIS_URL, socket_connect_timeout=5).ping()  # fail loudly if Redis is missing
    with FakeUpstream(Reply.text("answer", usage=Usage(input_tokens=10, output_tokens=100), delay=0.05)) as up:
        env = write_config(tmp_path, up)
        env.update({"MODELPORT_REDIS_URL": REDIS_URL, "MODELPORT_RATELIMIT_PREFIX": "mp-test-" + secrets.token_hex(4)})
        async with migrated_database_url("postgres", tmp_path) as db_url:
            env["MODELPORT_DATABASE_URL"] = db_url
            with server(tmp_path, env) as first, server(tmp_path, env) as second:
                key = team_with_key(first, "pair", f"{BALANCE_MICROS / 1_000_000:.6f}")
                body = {"model": "fake/priced", "max_tokens": 100, "messages": [{"role": "user", "content": "Hi"}]}
                auth = {"Authorization": f"Bearer {key}"}
                async with httpx.AsyncClient(timeout=60) as client:

                    async def one(i: int) -> httpx.Response:
                        await asyncio.sleep(i * 0.2)  # about 5 a second, alternating processes
                        target = first if i % 2 == 0 else second
                        return await client.post(target.text_url + "/v1/chat/completions", json=body, headers=auth)

                    responses = await asyncio.gather(*(one(i) for i in range(18)))
                codes = [r.status_code for r in responses]
                assert codes == [200] * 18, codes
                deadline = time.monotonic() + 15
                while True:  # every hold released (the shown frozen balance is rounded to 4 places)
                    entries = admin(first, "GET", "/teams/pair/ledger?limit=1000").json()["data"]["entries"]
                    if sum(e["amount_micros"] for e in entries if e["kind"] in ("hold", "release")) == 0:
                        break
                    assert time.monotonic() < deadline, "reservations were not returned"
                    await asyncio.sleep(0.1)
                charges = -sum(e["amount_micros"] for e in entries if e["kind"] == "charge")
                assert charges == 18 * COST_MICROS
                assert sum(e["amount_micros"] for e in entries) == BALANCE_MICROS - charges
