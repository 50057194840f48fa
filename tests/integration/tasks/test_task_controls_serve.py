"""Task controls through a real `modelport serve` (SQLite, one worker, one render thread), raw HTTP: progress
rising on a `local/style-video` task, queue positions behind it, cancelling it while it renders (the render
stops, the balance comes back, `task.cancelled` is sent), webhook events only when chosen, `Prefer: wait`,
`X-Task-Timeout` and `X-Result-Retention`, and the headers' 400s."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from tests.integration.tasks.helpers import (
    SKETCH,
    Team,
    WebhookReceiver,
    create,
    free_port,
    make_team,
    task_env,
    task_server,
    wait_ended,
    wait_for,
)
from tests.support.media_make import video
from tests.support.server import RunningServer

STYLE_VIDEO = "/local/style-video"


@pytest.fixture(scope="module")
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver().running() as running:
        yield running


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, receiver: WebhookReceiver) -> Iterator[RunningServer]:
    env = task_env(
        receiver,
        free_port(),
        MODELPORT_TASKS__WORKER_CONCURRENCY="1",
        MODELPORT_TASKS__RENDER_THREADS="1",
        MODELPORT_TASKS__PROGRESS_WEBHOOK_SECONDS="0.5",
    )
    with task_server(tmp_path_factory.mktemp("task-controls"), env) as running:
        yield running


@pytest.fixture(scope="module")
def team(server: RunningServer) -> Team:
    return make_team(server, "directors", topup_usd="100")


@pytest.fixture(scope="module")
def long_video(server: RunningServer, team: Team) -> str:
    """Our download URL of a 10 s, 300-frame clip: the longest `local/style-video` renders (many seconds)."""
    got = httpx.post(
        server.media_url + "/api/v1/media/files",
        files={"file": ("long.mp4", video(512, 288, 10, fps=30), "video/mp4")},
        headers=team.headers,
        timeout=60,
    )
    assert got.status_code == 200, got.text
    url: str = got.json()["data"]["download_url"]
    return url


def get_task(server: RunningServer, team: Team, task_id: str) -> dict[str, Any]:
    got = httpx.get(f"{server.media_url}/api/v1/tasks/{task_id}", headers=team.headers, timeout=30)
    assert got.status_code == 200, got.text
    data: dict[str, Any] = got.json()["data"]
    return data


def available(server: RunningServer, team: Team) -> float:
    got = httpx.get(server.media_url + "/api/v1/team/balance", headers=team.headers, timeout=30)
    value: float = got.json()["data"]["available_balance"]
    return value


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def events_of(receiver: WebhookReceiver, task_id: str) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in receiver.by_task(delivered=True).get(task_id, [])]


def test_progress_queue_position_and_cancelling_a_running_render(
    server: RunningServer, team: Team, receiver: WebhookReceiver, long_video: str
) -> None:
    before = available(server, team)
    made = create(
        server,
        team,
        {"video_url": long_video},
        webhook=receiver.url(),
        path=STYLE_VIDEO,
    )
    assert made.status_code == 200, made.text
    task_id = made.json()["data"]["task_id"]
    # Chosen events on this one; the default (terminal only) on the next.
    chosen = httpx.post(
        server.media_url + STYLE_VIDEO,
        json={"video_url": long_video},
        headers={
            **team.headers,
            "X-Webhook-URL": receiver.url(),
            "X-Webhook-Events": "task.started, task.progress,task.cancelled",
        },
        timeout=30,
    )
    assert chosen.status_code == 200, chosen.text
    chosen_id = chosen.json()["data"]["task_id"]
    assert chosen.json()["data"]["queue_position"] == 1  # one worker, busy with the first

    seen: list[int] = []
    wait_for(lambda: _progress_rose(get_task(server, team, task_id), seen), timeout=120, what="progress rising")
    assert seen == sorted(seen) and 0 < seen[-1] < 100, seen

    # Cancelling the first (running) task: ended at once, everything frozen released.
    started = time.monotonic()
    cancelled = httpx.post(f"{server.media_url}/api/v1/tasks/{task_id}/cancel", headers=team.headers, timeout=30)
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["data"]["status"] == "cancelled"
    assert cancelled.json()["data"]["error"]["code"] == "cancelled"
    assert time.monotonic() - started < 3
    # The render stopped (no more work in the process once the second task is cancelled too), and the
    # second task, which took the worker, reports progress and its chosen webhook events.
    wait_for(lambda: get_task(server, team, chosen_id)["progress"] is not None, timeout=120, what="second starts")
    wait_for(
        lambda: {"task.started", "task.progress"} <= {e["type"] for e in events_of(receiver, chosen_id)},
        timeout=60,
        what="task.started and task.progress",
    )
    second = httpx.post(f"{server.media_url}/api/v1/tasks/{chosen_id}/cancel", headers=team.headers, timeout=30)
    assert second.status_code == 200 and second.json()["data"]["status"] == "cancelled", second.text
    time.sleep(2)  # the stop reaches the render within about a second
    used = cpu_seconds(server.process.pid)
    time.sleep(3)
    assert cpu_seconds(server.process.pid) - used < 1.0  # a render still running would use ~3 s of CPU

    assert available(server, team) == before
    again = httpx.post(f"{server.media_url}/api/v1/tasks/{task_id}/cancel", headers=team.headers, timeout=30)
    assert again.status_code == 409 and "can no longer be cancelled" in again.json()["message"]

    wait_for(lambda: len(events_of(receiver, task_id)) >= 1, what="task.cancelled of the first")
    wait_for(lambda: "task.cancelled" in {e["type"] for e in events_of(receiver, chosen_id)}, what="2nd cancelled")
    assert [e["type"] for e in events_of(receiver, task_id)] == ["task.cancelled"]  # not asked: no running events
    progress = [e["data"]["progress"] for e in events_of(receiver, chosen_id) if e["type"] == "task.progress"]
    assert progress and progress == sorted(progress), progress
    started_event = next(e for e in events_of(receiver, chosen_id) if e["type"] == "task.started")
    assert started_event["data"]["status"] == "processing"


def _progress_rose(task: dict[str, Any], seen: list[int]) -> bool:
    assert task["status"] in ("queued", "processing"), task
    if task["status"] == "processing" and task["progress"] is not None and task["progress"] not in seen:
        seen.append(task["progress"])
    return len(seen) >= 3


def test_prefer_wait_returns_the_finished_image_in_one_call(server: RunningServer, team: Team) -> None:
    got = httpx.post(
        server.media_url + SKETCH,
        json={"prompt": "a lighthouse at dusk", "width": 128, "height": 96},
        headers={**team.headers, "Prefer": "wait=30"},
        timeout=60,
    )
    assert got.status_code == 200, got.text
    assert got.headers["preference-applied"] == "wait=30"
    task = got.json()["data"]
    assert task["status"] == "success" and task["progress"] == 100, task
    (resource,) = task["result"]["resources"]
    assert httpx.get(resource["url"], timeout=30).headers["content-type"] == "image/png"
    assert task == get_task(server, team, task["task_id"])


def test_task_timeout_fails_a_running_task_and_refunds(server: RunningServer, team: Team, long_video: str) -> None:
    before = available(server, team)
    got = httpx.post(
        server.media_url + STYLE_VIDEO,
        json={"video_url": long_video},
        headers={**team.headers, "X-Task-Timeout": "1"},
        timeout=30,
    )
    assert got.status_code == 200, got.text
    task_id = got.json()["data"]["task_id"]
    task = wait_ended(server.media_url, team, [task_id], timeout=30)[task_id]
    assert task["status"] == "failed" and task["error"]["code"] == "deadline_exceeded", task
    assert task["result"]["extensions"]["end_time"] - task["result"]["extensions"]["submit_time"] < 10_000
    assert available(server, team) == before


def test_result_retention_shortens_the_result_life(server: RunningServer, team: Team) -> None:
    got = httpx.post(
        server.media_url + SKETCH,
        json={"prompt": "short lived", "width": 64, "height": 64},
        headers={**team.headers, "X-Result-Retention": "60", "Prefer": "wait=30"},
        timeout=60,
    )
    assert got.status_code == 200, got.text
    task = got.json()["data"]
    assert task["status"] == "success", task
    end = task["result"]["extensions"]["end_time"]
    assert abs(task["result_expires_at"] - (end + 60_000)) < 2_000
    expires = int(parse_qs(urlparse(task["result"]["resources"][0]["url"]).query)["expires"][0])
    assert abs(expires - task["result_expires_at"] // 1000) <= 1


@pytest.mark.parametrize(
    ("headers", "named"),
    [
        ({"X-Task-Timeout": "0"}, "X-Task-Timeout"),
        ({"X-Task-Timeout": "301"}, "X-Task-Timeout"),  # local/sketch-image's own deadline is 300 s
        ({"X-Task-Timeout": "soon"}, "X-Task-Timeout"),
        ({"X-Result-Retention": "59"}, "X-Result-Retention"),
        ({"X-Result-Retention": str(7 * 24 * 3600 + 1)}, "X-Result-Retention"),
        ({"X-Webhook-Events": "task.succeeded"}, "X-Webhook-Events"),  # no X-Webhook-URL
        ({"Prefer": "wait=61"}, "Prefer"),
        ({"Prefer": "wait=0"}, "Prefer"),
    ],
)
def test_bad_header_values_are_400(server: RunningServer, team: Team, headers: dict[str, str], named: str) -> None:
    before = available(server, team)
    got = httpx.post(server.media_url + SKETCH, json={"prompt": "p"}, headers={**team.headers, **headers}, timeout=30)
    assert got.status_code == 400, got.text
    assert got.json()["code"] == 400 and named in got.json()["message"], got.text
    assert available(server, team) == before


def test_unknown_webhook_event_is_400(server: RunningServer, team: Team, receiver: WebhookReceiver) -> None:
    got = httpx.post(
        server.media_url + SKETCH,
        json={"prompt": "p"},
        headers={**team.headers, "X-Webhook-URL": receiver.url(), "X-Webhook-Events": "task.succeeded,task.done"},
        timeout=30,
    )
    assert got.status_code == 400 and "X-Webhook-Events" in got.json()["message"], got.text


def test_the_openapi_document_describes_the_controls(server: RunningServer) -> None:
    document = httpx.get(server.media_url + "/openapi.json", timeout=30).json()
    create_op = document["paths"]["/{provider}/{model}"]["post"]
    named = {p["name"] for p in create_op["parameters"] if p["in"] == "header"}
    assert {"Idempotency-Key", "Prefer", "X-Task-Timeout", "X-Result-Retention", "X-Webhook-Events"} <= named
    assert {"Idempotent-Replayed", "Preference-Applied"} <= set(create_op["responses"]["200"]["headers"])
    events = document["paths"]["/api/v1/tasks/{task_id}/events"]["get"]
    assert "text/event-stream" in events["responses"]["200"]["content"]
    for path in ("/api/v1/media/files", "/api/v1/media/providers/{provider}/assets"):
        assert "Idempotency-Key" in {p["name"] for p in document["paths"][path]["post"]["parameters"]}
