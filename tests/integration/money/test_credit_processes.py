"""Credit reservations across real `modelport serve` processes: money frozen by a SIGKILLed process (or
`--workers` worker) comes back within the lease and sweep interval, on SQLite and PostgreSQL. (Two
processes sharing a team without false 402s: test_no_false_402.py.)"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from tests.integration.money.helpers import admin, server, team_with_key, write_config
from tests.support.databases import BACKENDS, migrated_database_url
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.server import RunningServer, run_server, worker_pids

# 10 input + 100 output tokens at 1 and 2 USD per million tokens.
COST_MICROS = 10 * 1 + 100 * 2
BODY = {"model": "fake/priced", "max_tokens": 100, "messages": [{"role": "user", "content": "Hi"}]}
# Short leases so a test sees the sweep: recovery takes at most lease + sweep interval.
LEASE, SWEEP = 1.0, 0.5
FAST_LEASES = {"MODELPORT_CREDIT__LEASE_SECONDS": str(LEASE), "MODELPORT_CREDIT__SWEEP_INTERVAL_SECONDS": str(SWEEP)}


def _team(running: RunningServer, name: str) -> dict[str, object]:
    data: dict[str, object] = admin(running, "GET", f"/teams/{name}").json()["data"]
    return data


def _micros(usd: object) -> int:
    return round(float(str(usd)) * 1_000_000)


async def _until_unfrozen(running: RunningServer, name: str, limit: float) -> float:
    """Seconds until every hold of the team is released (frozen exactly 0: the ledger's holds and releases
    cancel out; the shown frozen balance is rounded to 4 places)."""
    started = time.monotonic()
    while True:
        entries = _ledger(running, name)
        held = sum(int(str(e["amount_micros"])) for e in entries if e["kind"] in ("hold", "release"))
        if held == 0 and _team(running, name)["frozen_usd"] == 0:
            return time.monotonic() - started
        assert time.monotonic() - started < limit, (held, _team(running, name))
        await asyncio.sleep(0.05)


def _ledger(running: RunningServer, name: str) -> list[dict[str, object]]:
    entries: list[dict[str, object]] = admin(running, "GET", f"/teams/{name}/ledger?limit=1000").json()["data"][
        "entries"
    ]
    return entries


@pytest.mark.parametrize("backend", BACKENDS)
async def test_money_frozen_by_a_killed_process_comes_back_within_the_sweep_interval(
    backend: str, tmp_path: Path
) -> None:
    with FakeUpstream(Reply.text("late", usage=Usage(input_tokens=10, output_tokens=100), delay=10)) as up:
        env = {**write_config(tmp_path, up), **FAST_LEASES}
        async with migrated_database_url(backend, tmp_path) as db_url:
            env["MODELPORT_DATABASE_URL"] = db_url
            with server(tmp_path, env) as survivor, run_server(tmp_path, env=env) as victim:
                key = team_with_key(survivor, "crash", "1")
                auth = {"Authorization": f"Bearer {key}"}
                async with httpx.AsyncClient(timeout=60) as client:
                    pending = [
                        asyncio.create_task(
                            client.post(victim.text_url + "/v1/chat/completions", json=BODY, headers=auth)
                        )
                        for _ in range(4)
                    ]
                    deadline = time.monotonic() + 10
                    while _team(survivor, "crash")["frozen_usd"] == 0:
                        assert time.monotonic() < deadline
                        await asyncio.sleep(0.05)
                    victim.stop(signal.SIGKILL)
                    recovered = await _until_unfrozen(survivor, "crash", LEASE + SWEEP + 5)
                    await asyncio.gather(*pending, return_exceptions=True)
                entries = _ledger(survivor, "crash")
                assert [e for e in entries if e["kind"] == "charge"] == []  # unknown usage is not charged
                assert sum(int(str(e["amount_micros"])) for e in entries) == 1_000_000
                assert _micros(_team(survivor, "crash")["balance_usd"]) == 1_000_000
                assert recovered < LEASE + SWEEP + 2, recovered


async def test_money_frozen_by_a_killed_worker_comes_back(tmp_path: Path) -> None:
    from modelport.billing.tables import credit_reservations
    from modelport.storage.db import create_engine

    # The workers share one listening socket and the kernel does not spread accepts fairly: one worker may
    # take a whole burst. So new connections keep coming until both workers hold a reservation. The upstream
    # is slower than that wait may take, so no request has finished (and been settled or not) at the kill.
    with FakeUpstream(Reply.text("late", usage=Usage(input_tokens=10, output_tokens=100), delay=25)) as up:
        db_url = f"sqlite+aiosqlite:///{tmp_path / 'workers.db'}"
        env = {**write_config(tmp_path, up), **FAST_LEASES, "MODELPORT_DATABASE_URL": db_url}
        with run_server(tmp_path, "--workers", "2", env=env) as multi:
            key = team_with_key(multi, "workers", "1")
            auth = {"Authorization": f"Bearer {key}"}
            workers = worker_pids(multi.process.pid)
            assert len(workers) == 2
            pending: list[asyncio.Task[httpx.Response]] = []
            async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_keepalive_connections=0)) as client:

                def send() -> None:
                    url = multi.text_url + "/v1/chat/completions"
                    pending.append(asyncio.create_task(client.post(url, json=BODY, headers=auth)))

                engine = create_engine(db_url)
                try:
                    deadline = time.monotonic() + 20  # well inside the upstream's 25 s
                    while True:
                        if len(pending) < 200:
                            send()
                        async with engine.connect() as conn:
                            owners = {o for (o,) in (await conn.execute(select(credit_reservations.c.owner))).all()}
                        pids = {int(o.split("-")[-2]) for o in owners}
                        if set(workers) <= pids:
                            break
                        assert time.monotonic() < deadline, (owners, workers, len(pending))
                        await asyncio.sleep(0.1)
                finally:
                    await engine.dispose()
                os.kill(workers[0], signal.SIGKILL)
                results = await asyncio.gather(*pending, return_exceptions=True)
            ok = sum(1 for r in results if isinstance(r, httpx.Response) and r.status_code == 200)
            assert 0 < ok < len(results)
            # The survivor's requests settled; what the dead worker held comes back by the sweep.
            await _until_unfrozen(multi, "workers", LEASE + SWEEP + 5)
            entries = _ledger(multi, "workers")
            charged = -sum(int(str(e["amount_micros"])) for e in entries if e["kind"] == "charge")
            assert charged == ok * COST_MICROS
            assert sum(int(str(e["amount_micros"])) for e in entries) == 1_000_000 - charged
