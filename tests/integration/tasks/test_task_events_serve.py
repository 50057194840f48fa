"""The live status stream across processes, raw HTTP: a task is created on a `serve --no-workers` and followed
there with `GET /api/v1/tasks/{id}/events`, while another `serve` (started once the stream showed the task
queued) runs it; on PostgreSQL (LISTEN/NOTIFY) and on SQLite with Redis (pub/sub). The stream shows `queued`
(with keep-alive comments while nothing happens), then `processing`, rising progress and `success` within a
second of the task's end, and closes; the last event is the task as GET returns it."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.tasks.helpers import free_port, make_team, task_env, task_server
from tests.support.databases import migrated_postgres_database

REDIS_URL = os.environ.get("MODELPORT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.mark.parametrize("backend", ["postgres", "sqlite+redis"])
def test_stream_of_a_task_run_by_another_process(backend: str, tmp_path: Path) -> None:
    async def run() -> None:
        if backend == "postgres":
            async with migrated_postgres_database() as url:
                await asyncio.to_thread(_stream_across_processes, tmp_path, {"MODELPORT_DATABASE_URL": url})
        else:
            env = {"MODELPORT_REDIS_URL": REDIS_URL, "MODELPORT_RATELIMIT_PREFIX": "mp-" + secrets.token_hex(4)}
            await asyncio.to_thread(_stream_across_processes, tmp_path, env)

    asyncio.run(run())


def _stream_across_processes(tmp_path: Path, backend_env: dict[str, str]) -> None:
    port = free_port()
    front_env = task_env(
        None,
        port,
        MODELPORT_TASKS__RUN_WORKERS="false",
        MODELPORT_TASKS__EVENTS_KEEPALIVE_SECONDS="1",
        **backend_env,
    )
    with ExitStack() as stack:
        front = stack.enter_context(task_server(tmp_path, front_env))
        team = make_team(front, "watchers", topup_usd="10")
        # 300 frames at 640x360: ~2.5 s of CPU (3.5 s of wall on a quiet machine: ~7 progress writes at 0.5 s),
        # where 1280x720 took 12.4 s of CPU for the same stream, twice per run.
        made = httpx.post(
            front.media_url + "/local/slideshow-video",
            json={"prompt": "a slow pan", "duration": 10, "fps": 30, "width": 640, "height": 360},
            headers=team.headers,
            timeout=30,
        )
        assert made.status_code == 200, made.text
        task_id = made.json()["data"]["task_id"]

        unknown = httpx.get(f"{front.media_url}/api/v1/tasks/task_nope/events", headers=team.headers, timeout=30)
        assert unknown.status_code == 404

        events: list[dict[str, Any]] = []
        received_ms = 0.0
        comments = 0
        back_started = False
        with httpx.stream(
            "GET", f"{front.media_url}/api/v1/tasks/{task_id}/events", headers=team.headers, timeout=120
        ) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            name = None
            for line in stream.iter_lines():
                if line.startswith(":"):
                    comments += 1
                    if comments == 2 and not back_started:
                        # Queued, nothing runs it: now a second process (with workers) joins.
                        back_started = True
                        back_env = {**front_env, "MODELPORT_TASKS__RUN_WORKERS": "true"}
                        back_env["MODELPORT_PUBLIC_MEDIA_URL"] = f"http://127.0.0.1:{free_port()}"
                        stack.enter_context(task_server(tmp_path, back_env))
                elif line.startswith("event: "):
                    name = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    assert name == "task"
                    events.append(json.loads(line.removeprefix("data: ")))
                    received_ms = time.time() * 1000
        # The stream closed by itself after the terminal event.
        statuses = [e["status"] for e in events]
        assert statuses[0] == "queued" and events[0]["queue_position"] == 1, events[0]
        assert statuses[-1] == "success", statuses
        assert "processing" in statuses
        running = [e["progress"] for e in events if e["status"] == "processing" and e["progress"] is not None]
        assert len(running) >= 2 and running == sorted(running), running
        assert comments >= 2
        # Seen within a second of the end (the row is read only every 5 s while notifications flow).
        assert received_ms - events[-1]["result"]["extensions"]["end_time"] < 1500
        final = httpx.get(f"{front.media_url}/api/v1/tasks/{task_id}", headers=team.headers, timeout=30)
        assert events[-1] == final.json()["data"]


def test_a_server_shutting_down_ends_its_streams(tmp_path: Path) -> None:
    env = task_env(None, free_port(), MODELPORT_TASKS__RUN_WORKERS="false")
    with task_server(tmp_path, env) as server:
        team = make_team(server, "leavers", topup_usd="1")
        made = httpx.post(server.media_url + "/local/sketch-image", json={"prompt": "p"}, headers=team.headers)
        task_id = made.json()["data"]["task_id"]
        lines: list[str] = []
        with httpx.stream(
            "GET", f"{server.media_url}/api/v1/tasks/{task_id}/events", headers=team.headers, timeout=60
        ) as stream:
            for line in stream.iter_lines():
                lines.append(line)
                if line.startswith("data: "):
                    server.process.send_signal(signal.SIGTERM)  # the task stays queued: nothing runs it
                    stopped = time.monotonic()
        assert time.monotonic() - stopped < 15  # ended by the server, well before its 30 s grace period
        assert json.loads(lines[1].removeprefix("data: "))["status"] == "queued"
        assert server.process.wait(timeout=30) == 0
