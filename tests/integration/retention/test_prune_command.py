"""`modelport admin prune`: one pruning run now, with the windows `serve` uses, from the command line.

On a SQLite data directory with request log rows of 10 days ago and of now, a 1-day window removes exactly
the old rows (the report says how many, and the steps' times), and a run while another process holds the
pruner lock exits 1 and removes nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import select

from modelport.accounts import service as accounts
from modelport.requestlog.record import LogRecord
from modelport.requestlog.store import insert_logs
from modelport.requestlog.tables import request_logs
from modelport.retention.lock import pruner_lock
from modelport.storage.db import create_engine
from modelport.storage.migrate import upgrade_to_head

DAY_MS = 86_400_000


def prune(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "modelport", "admin", "prune", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def fill(url: str) -> tuple[set[str], set[str]]:
    engine = create_engine(url)
    try:
        await upgrade_to_head(engine)
        team = await accounts.create_team(engine, "pruned", tier="free")
        now = int(time.time() * 1000)
        old = [LogRecord(f"req_old_{k}", team.id, now - 10 * DAY_MS + k, "success", "p", "m", "chat") for k in range(7)]
        new = [LogRecord(f"req_new_{k}", team.id, now - k, "success", "p", "m", "chat") for k in range(3)]
        assert await insert_logs(engine, old + new) == 10
        return {r.id for r in old}, {r.id for r in new}
    finally:
        await engine.dispose()


async def log_ids(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return set((await conn.scalars(select(request_logs.c.id))).all())
    finally:
        await engine.dispose()


def test_one_pruning_run_from_the_command_line(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    url = f"sqlite+aiosqlite:///{data_dir / 'modelport.db'}"
    old, new = asyncio.run(fill(url))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MODELPORT_")}
    env.update(
        {
            "MODELPORT_DATA_DIR": str(data_dir),
            "MODELPORT_DATABASE_URL": url,
            "MODELPORT_RETENTION__REQUEST_LOGS_DAYS": "1",
        }
    )

    async def while_locked() -> subprocess.CompletedProcess[str]:
        engine = create_engine(url)
        try:
            async with pruner_lock(engine, data_dir / "retention.lock") as held:
                assert held
                return await asyncio.to_thread(prune, env)
        finally:
            await engine.dispose()

    refused = asyncio.run(while_locked())
    assert refused.returncode == 1 and "another process is pruning" in refused.stderr
    assert asyncio.run(log_ids(url)) == old | new

    done = prune(env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["removed"]["request_logs"] == len(old)
    assert {"payloads", "request_logs", "tasks"} <= report["phases"].keys()
    assert asyncio.run(log_ids(url)) == new
