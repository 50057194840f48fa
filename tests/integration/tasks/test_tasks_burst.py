"""200 concurrent task creations over HTTP against a balance for 20, on SQLite and PostgreSQL: exactly 20 are
accepted, the rest are 402, and the ledger adds up to the balance."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tests.integration.tasks.helpers import (
    PRICE_MICROS,
    SKETCH,
    create,
    free_port,
    ledger_report,
    make_team,
    task_env,
    task_server,
)
from tests.support.databases import migrated_postgres_database

CONFIG = """
[[tiers]]
name = "roomy"
qualifying_topup_usd = "0"
inference_rpm = 100000
query_rpm = 100000
concurrent_media_tasks = 1000
"""


async def burst(media_url: str, key: str) -> list[int]:
    limits = httpx.Limits(max_connections=200)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:
        answers = await asyncio.gather(
            *(
                client.post(media_url + SKETCH, json={"prompt": f"b{i}"}, headers={"Authorization": f"Bearer {key}"})
                for i in range(200)
            )
        )
    return [a.status_code for a in answers]


def run_burst(tmp_path: Path, database_url: str | None) -> None:
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    env = task_env(None, free_port(), MODELPORT_CONFIG=str(config))
    if database_url is not None:
        env["MODELPORT_DATABASE_URL"] = database_url
    with task_server(tmp_path / "data", env, "--no-workers") as server:
        team = make_team(server, "bursty", topup_usd=str(20 * PRICE_MICROS / 1_000_000))
        codes = asyncio.run(burst(server.media_url, team.key))
        assert codes.count(200) == 20 and codes.count(402) == 180, sorted(set(codes))
        assert create(server, team, {"prompt": "one more"}).status_code == 402
    url = database_url or f"sqlite+aiosqlite:///{tmp_path / 'data' / 'modelport.db'}"
    report = ledger_report(url, team.id)
    assert report.entries_sum == report.balance_micros == 0
    assert report.frozen_micros == 20 * PRICE_MICROS and len(report.statuses) == 20


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_200_concurrent_creations_over_http(tmp_path: Path, backend: str) -> None:
    if backend == "sqlite":
        run_burst(tmp_path, None)
        return

    async def on_postgres() -> None:
        async with migrated_postgres_database() as url:
            await asyncio.to_thread(run_burst, tmp_path, url)

    asyncio.run(on_postgres())
