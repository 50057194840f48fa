"""SIGTERM with requests in flight: every request finishes, and every log row and every charge is written."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from modelport.accounts.tables import teams
from modelport.billing.tables import ledger_entries
from modelport.requestlog.tables import request_logs
from modelport.storage.db import create_engine
from tests.integration.money.helpers import server, team_with_key, write_config
from tests.support.databases import BACKENDS, migrated_database_url
from tests.support.fake_upstream import FakeUpstream, Reply, Usage

IN_FLIGHT = 40


@pytest.mark.parametrize("backend", BACKENDS)
async def test_sigterm_drains_logs_and_charges(backend: str, tmp_path: Path) -> None:
    slow = Reply.text("slow answer", usage=Usage(input_tokens=10, output_tokens=20), delay=3.0, chunk_delay=0.05)
    with FakeUpstream(slow) as up:
        env = write_config(tmp_path, up)
        async with migrated_database_url(backend, tmp_path) as db_url:
            env["MODELPORT_DATABASE_URL"] = db_url
            with server(tmp_path, env) as running:
                key = team_with_key(running, "drained", "5")
                headers = {"Authorization": f"Bearer {key}"}
                body = {"model": "fake/priced", "max_tokens": 50, "messages": [{"role": "user", "content": "Hi"}]}
                async with httpx.AsyncClient(timeout=60) as client:

                    async def one(i: int) -> int:
                        if i % 2:
                            async with client.stream(
                                "POST",
                                running.text_url + "/v1/chat/completions",
                                json={**body, "stream": True},
                                headers=headers,
                            ) as r:
                                text = (await r.aread()).decode()
                                assert text.rstrip().endswith("data: [DONE]"), text[-200:]
                                return r.status_code
                        r = await client.post(running.text_url + "/v1/chat/completions", json=body, headers=headers)
                        return r.status_code

                    tasks = [asyncio.create_task(one(i)) for i in range(IN_FLIGHT)]
                    for _ in range(1000):  # the fake counts calls on its own thread: poll it, 20 s at most
                        if up.call_count() >= IN_FLIGHT:
                            break
                        await asyncio.sleep(0.02)
                    assert up.call_count() == IN_FLIGHT  # all are waiting on the slow upstream now
                    running.process.send_signal(signal.SIGTERM)
                    codes = await asyncio.gather(*tasks)
                assert codes == [200] * IN_FLIGHT
                assert await asyncio.to_thread(running.process.wait, 60) == 0

            engine = create_engine(db_url)
            try:
                async with engine.connect() as conn:
                    team = (await conn.execute(select(teams).where(teams.c.name == "drained"))).one()
                    logs = (await conn.execute(select(request_logs).where(request_logs.c.team_id == team.id))).all()
                    charges = (
                        await conn.execute(
                            select(func.count()).where(
                                ledger_entries.c.team_id == team.id, ledger_entries.c.kind == "charge"
                            )
                        )
                    ).scalar_one()
                    total = (
                        await conn.execute(
                            select(func.sum(ledger_entries.c.amount_micros)).where(ledger_entries.c.team_id == team.id)
                        )
                    ).scalar_one()
            finally:
                await engine.dispose()
            assert len(logs) == IN_FLIGHT
            assert {row.status for row in logs} == {"success"}
            assert all(row.prompt_tokens == 10 and row.completion_tokens == 20 for row in logs)
            assert charges == IN_FLIGHT
            assert team.frozen_micros == 0
            assert int(total) == team.balance_micros == 5_000_000 - IN_FLIGHT * (10 * 1 + 20 * 2)
