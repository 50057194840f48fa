"""Scale-out on PostgreSQL and S3 (moto): two `serve` processes (with their in-process workers) and two
`modelport worker` processes, each with its own data directory as on separate machines, share the tasks.
No task runs twice to completion, the tier's concurrent-task limit holds across the two servers, and every
result downloads through either server."""

from __future__ import annotations

import asyncio
import io
import json
import random
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import httpx
from PIL import Image
from sqlalchemy import func, select

from modelport.media.tasks.tables import media_tasks
from modelport.storage.db import create_engine
from tests.integration.tasks.helpers import (
    WebhookReceiver,
    assert_settled_once,
    create,
    free_port,
    ledger_report,
    make_team,
    reap,
    start_worker,
    task_env,
    task_server,
    wait_ended,
    wait_for,
)
from tests.support.databases import migrated_postgres_database
from tests.support.s3 import moto_s3

TIER1_LIMIT = 5  # a single top-up of 10 USD moves a team to tier1: 5 unfinished media tasks
TASKS = 12


def test_two_servers_and_two_workers_share_the_work(tmp_path: Path) -> None:
    async def run() -> None:
        async with migrated_postgres_database() as database_url:
            await asyncio.to_thread(_scale_out, tmp_path, database_url)

    asyncio.run(run())


def _sample_unfinished(database_url: str, team_id: str, stop: threading.Event, samples: list[tuple[int, int]]) -> None:
    async def loop() -> None:
        engine = create_engine(database_url)
        try:
            while not stop.is_set():
                async with engine.connect() as conn:
                    rows = (
                        await conn.execute(
                            select(media_tasks.c.status, func.count())
                            .where(media_tasks.c.team_id == team_id)
                            .group_by(media_tasks.c.status)
                        )
                    ).all()
                counts = {r[0]: int(r[1]) for r in rows}
                samples.append((counts.get("queued", 0) + counts.get("processing", 0), counts.get("processing", 0)))
                await asyncio.sleep(0.05)
        finally:
            await engine.dispose()

    asyncio.run(loop())


def _scale_out(tmp_path: Path, database_url: str) -> None:
    with WebhookReceiver().running() as receiver, ExitStack() as stack:
        shared = stack.enter_context(moto_s3("mp-tasks-"))
        envs = [
            task_env(
                receiver,
                free_port(),
                MODELPORT_DATABASE_URL=database_url,
                MODELPORT_TASKS__WORKER_CONCURRENCY="1",
                **shared,
            )
            for _ in range(2)
        ]
        servers = [stack.enter_context(task_server(tmp_path / f"s{i}", env)) for i, env in enumerate(envs)]
        workers = [start_worker(tmp_path / "w", envs[0]) for _ in range(2)]
        try:
            team = make_team(servers[0], "fleet", topup_usd="10")
            stop = threading.Event()
            samples: list[tuple[int, int]] = []
            sampler = threading.Thread(target=_sample_unfinished, args=(database_url, team.id, stop, samples))
            sampler.start()
            accepted: list[str] = []
            refused = 0
            lock = threading.Lock()

            def submit(i: int) -> None:
                nonlocal refused
                while True:
                    with lock:
                        if len(accepted) >= TASKS:
                            return
                    got = create(
                        servers[i % 2],
                        team,
                        {"prompt": f"fleet {i}", "width": 256, "height": 256},
                        webhook=receiver.url(),
                    )
                    if got.status_code == 200:
                        with lock:
                            accepted.append(got.json()["data"]["task_id"])
                        return
                    assert got.status_code == 429, got.text
                    with lock:
                        refused += 1
                    time.sleep(random.uniform(0.05, 0.2))

            with ThreadPoolExecutor(max_workers=12) as pool:
                list(pool.map(submit, range(TASKS)))
            ended = wait_ended(servers[0].media_url, team, accepted, timeout=240)
            stop.set()
            sampler.join()
        finally:
            for worker in workers:
                worker.send_signal(signal.SIGTERM)
            for worker in workers:
                reap(worker)

        assert refused > 0  # the burst met the limit
        assert len(accepted) == TASKS and all(t["status"] == "success" for t in ended.values())
        assert samples and max(unfinished for unfinished, _ in samples) <= TIER1_LIMIT
        assert max(processing for _, processing in samples) <= 4  # four processes, one task each
        report = ledger_report(database_url, team.id)
        assert_settled_once(report, accepted, images_per_task=1)
        assert all(report.deliveries[t] == 1 for t in accepted)
        runners = {report.claimed_by[t] for t in accepted}
        assert len(runners) >= 2, runners
        wait_for(lambda: set(accepted) <= set(receiver.by_task()), what="every webhook")
        for server in servers:
            assert httpx.get(server.media_url + "/api/v1/tasks", headers=team.headers).json()["data"]["total"] == TASKS
        # Results written by any worker download through either server, and through the webhook's URLs.
        for i, task_id in enumerate(accepted):
            task = httpx.get(f"{servers[i % 2].media_url}/api/v1/tasks/{task_id}", headers=team.headers).json()["data"]
            hooked = json.loads(receiver.by_task(delivered=True)[task_id][0].body)["data"]
            for url in [task["result"]["resources"][0]["url"], hooked["result"]["resources"][0]["url"]]:
                got = httpx.get(url)
                assert got.status_code == 200, (url, got.text)
                assert Image.open(io.BytesIO(got.content)).size == (256, 256)
