"""Several servers and workers starting at once on a fresh PostgreSQL database (a scaled-out deployment's
first start, compose.yaml's `serve-1` and `serve-2`): the start-up work runs one process at a time, so the
catalog is imported and the demo team created once, and no start fails."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import func, select

from modelport.accounts.tables import api_keys, teams
from modelport.process.bootstrap import prepare, prepare_worker
from modelport.settings import Settings
from modelport.storage.db import create_engine
from modelport.storage.migrate import upgrade_to_head
from tests.support.databases import postgres_database


def test_concurrent_first_starts_create_one_demo_team(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with postgres_database() as url:
            engines = [create_engine(url) for _ in range(9)]
            try:
                await upgrade_to_head(engines[0])
                settings = Settings(data_dir=tmp_path, database_url=url)
                results = await asyncio.gather(
                    *(prepare(engine, settings) for engine in engines[:8]), prepare_worker(engines[8], settings)
                )
                demos = [r for r in results if r is not None]
                assert len(demos) == 8
                assert sum(1 for d in demos if d.new_key is not None) == 1  # one start made the key, once
                async with engines[0].connect() as conn:
                    assert (await conn.execute(select(func.count()).select_from(teams))).scalar_one() == 1
                    assert (await conn.execute(select(func.count()).select_from(api_keys))).scalar_one() == 1
            finally:
                for engine in engines:
                    await engine.dispose()

    asyncio.run(scenario())
