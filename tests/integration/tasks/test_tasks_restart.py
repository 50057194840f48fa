"""Crash tests: SIGKILL a `serve` (SQLite, in-process workers) and, separately, a `modelport worker`
(PostgreSQL) while tasks are queued and running. After a restart every task ends and settles exactly once,
and every webhook arrives at least once with a signature the `standardwebhooks` package accepts."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
from pathlib import Path

import httpx
from standardwebhooks.webhooks import Webhook

from tests.integration.tasks.helpers import (
    Team,
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
from tests.support.server import RunningServer

# Two 896x896 images per task: ~2.9 s of CPU a task (1280x1280 took 6.4 s), still seconds of work each, so
# that tasks are queued and running when the process is killed.
BODY = {"prompt": "a storm over the harbour", "width": 896, "height": 896, "n": 2}


def statuses(server: RunningServer, team: Team, ids: list[str]) -> list[str]:
    return [
        httpx.get(f"{server.media_url}/api/v1/tasks/{i}", headers=team.headers).json()["data"]["status"] for i in ids
    ]


def refused_attempts(server: RunningServer, team: Team, task_id: str) -> int:
    """How many of the task's webhook attempts the server has recorded as refused with 503."""
    hooks = httpx.get(f"{server.media_url}/api/v1/tasks/{task_id}/webhooks", headers=team.headers)
    assert hooks.status_code == 200, hooks.text
    attempts = [a for d in hooks.json()["data"]["deliveries"] for a in d["attempts"]]
    return sum(1 for a in attempts if a["status_code"] == 503)


def check_webhooks(server: RunningServer, team: Team, receiver: WebhookReceiver, ids: list[str]) -> None:
    wait_for(lambda: set(ids) <= set(receiver.by_task(delivered=True)), timeout=120, what="a webhook for every task")
    secret = httpx.get(server.media_url + "/api/v1/webhooks/secret", headers=team.headers).json()["data"]["secret"]
    for task_id in ids:
        for delivered in receiver.by_task()[task_id]:
            payload = Webhook(secret).verify(delivered.body, delivered.headers)
            assert payload["type"] == "task.succeeded" and payload["data"]["task_id"] == task_id


def test_sigkill_serve_with_tasks_queued_and_running(tmp_path: Path) -> None:
    receiver_up = threading.Event()  # the receiver fails every delivery until after the restart
    receiver = WebhookReceiver(answer=lambda _path, _n: (204, {}) if receiver_up.is_set() else (503, {}))
    with receiver.running():
        # One task at a time on one render thread: the serial stage runs this beside the parallel one, whose
        # processes (at nice 19) got no CPU while eight tasks rendered on both cores (a parallel test's
        # 512x512 image then waited 120 s, CI 2026-12-04). One running and four queued is what a kill needs.
        env = task_env(
            receiver,
            free_port(),
            MODELPORT_WEBHOOKS__SCHEDULE_SECONDS=json.dumps([0] + [0.5] * 60),
            MODELPORT_TASKS__WORKER_CONCURRENCY="1",
            MODELPORT_TASKS__RENDER_THREADS="1",
        )
        with task_server(tmp_path, env) as server:
            team = make_team(server, "crashers", topup_usd="1000")
            ids = [create(server, team, BODY, webhook=receiver.url()).json()["data"]["task_id"] for _ in range(5)]

            refused_before_kill: set[str] = set()

            def refused_while_others_wait() -> bool:
                # The server's own record of a refused attempt, not the receiver's: the receiver sees an
                # attempt before the server has written it down, and a kill between the two loses the record
                # (the delivery is then simply tried again: at least once).
                refused_before_kill.update(t for t in receiver.by_task() if refused_attempts(server, team, t))
                now = statuses(server, team, ids)
                return bool(refused_before_kill) and any(s in ("queued", "processing") for s in now)

            # Generous: on a loaded 2-core machine the first image task alone can take half a minute.
            wait_for(refused_while_others_wait, timeout=120, what="a refused webhook while other tasks wait or run")
            server.stop(signal.SIGKILL)
        assert refused_before_kill  # a finished task's event was in the outbox, not yet delivered

        with task_server(tmp_path, env) as server:
            receiver_up.set()
            ended = wait_ended(server.media_url, team, ids, timeout=240)
            assert all(t["status"] == "success" for t in ended.values()), ended
            check_webhooks(server, team, receiver, ids)
            for task_id in refused_before_kill:
                hooks = httpx.get(f"{server.media_url}/api/v1/tasks/{task_id}/webhooks", headers=team.headers)
                (delivery,) = hooks.json()["data"]["deliveries"]
                assert delivery["status"] == "delivered" and delivery["attempts"][0]["status_code"] == 503
        database_url = f"sqlite+aiosqlite:///{tmp_path / 'modelport.db'}"
        assert_settled_once(ledger_report(database_url, team.id), ids, images_per_task=2)


def test_sigkill_a_worker_on_postgresql(tmp_path: Path) -> None:
    async def run() -> None:
        async with migrated_postgres_database() as database_url:
            await asyncio.to_thread(_worker_crash, tmp_path, database_url)

    asyncio.run(run())


def _worker_crash(tmp_path: Path, database_url: str) -> None:
    with WebhookReceiver().running() as receiver:
        env = task_env(
            receiver, free_port(), MODELPORT_DATABASE_URL=database_url, MODELPORT_TASKS__WORKER_CONCURRENCY="2"
        )
        with task_server(tmp_path, env, "--no-workers") as server:
            team = make_team(server, "pg-crashers", topup_usd="1000")
            ids = [create(server, team, BODY, webhook=receiver.url()).json()["data"]["task_id"] for _ in range(5)]
            first = start_worker(tmp_path, env)
            try:
                wait_for(lambda: "processing" in statuses(server, team, ids), what="a running task")
                first.kill()
                first.wait(timeout=10)
                # Read after the kill: what the dead worker left running (it can finish nothing more).
                before_kill = ledger_report(database_url, team.id)
            finally:
                if first.poll() is None:
                    first.kill()
                reap(first)
            running_when_killed = [i for i in ids if before_kill.statuses[i] == "processing"]
            assert running_when_killed, before_kill.statuses

            second = start_worker(tmp_path, env)
            try:
                ended = wait_ended(server.media_url, team, ids, timeout=240)
                assert all(t["status"] == "success" for t in ended.values()), ended
                check_webhooks(server, team, receiver, ids)
            finally:
                second.send_signal(signal.SIGTERM)
                reap(second)
        report = ledger_report(database_url, team.id)
        assert_settled_once(report, ids, images_per_task=2)
        # The runs the first worker lost were finished by the second.
        killed_worker = {before_kill.claimed_by[i] for i in running_when_killed}
        assert all(report.claimed_by[i] not in killed_worker for i in running_when_killed)
