"""Media tasks end to end through a real `modelport serve` (SQLite, in-process workers) over raw HTTP."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image
from standardwebhooks.webhooks import Webhook

from tests.integration.tasks.helpers import (
    PRICE_MICROS,
    SKETCH,
    Team,
    WebhookReceiver,
    assert_settled_once,
    create,
    free_port,
    ledger_report,
    make_team,
    task_env,
    task_server,
    wait_ended,
    wait_for,
)
from tests.support.server import RunningServer


@pytest.fixture(scope="module")
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver().running() as running:
        yield running


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, receiver: WebhookReceiver) -> Iterator[RunningServer]:
    with task_server(tmp_path_factory.mktemp("tasks-serve"), task_env(receiver, free_port())) as running:
        yield running


@pytest.fixture(scope="module")
def team(server: RunningServer) -> Team:
    return make_team(server, "painters", topup_usd="1000")


def database_url(server: RunningServer) -> str:
    return f"sqlite+aiosqlite:///{Path(server.env['MODELPORT_DATA_DIR']) / 'modelport.db'}"


def balance(server: RunningServer, team: Team) -> dict[str, float]:
    got = httpx.get(server.media_url + "/api/v1/team/balance", headers=team.headers)
    data: dict[str, float] = got.json()["data"]
    return data


def test_task_lifecycle_real_pngs_balance_and_signed_webhook(server: RunningServer, receiver: WebhookReceiver) -> None:
    # A team of its own: the team-wide checks below (frozen 0, the ledger summing to the balance) would see a
    # task another test left running on the module's shared team (the order is random).
    team = make_team(server, "lifecycle", topup_usd="1000")
    before = balance(server, team)
    created = create(
        server,
        team,
        {"prompt": "a lighthouse at dusk", "width": 320, "height": 200, "n": 3},
        webhook=receiver.url("/hook"),
    )
    assert created.status_code == 200, created.text
    body = created.json()
    assert body["code"] == 0 and body["message"] == "success"
    data = body["data"]
    assert data["status"] in ("queued", "processing") and data["model_id"] == "local/sketch-image"
    task_id = data["task_id"]

    task = wait_ended(server.media_url, team, [task_id])[task_id]
    assert task["status"] == "success", task
    assert set(task) == {
        "status",
        "task_id",
        "model_id",
        "duration",
        "result",
        "result_expires_at",
        "progress",
        "queue_position",
    }
    assert (task["progress"], task["queue_position"]) == (100, None)
    assert task["result"]["metadata"]["image_count"] == 3
    ext = task["result"]["extensions"]
    assert ext["submit_time"] <= ext["end_time"] and task["duration"] >= 0
    assert task["result_expires_at"] > ext["end_time"]
    pixels = set()
    for resource in task["result"]["resources"]:
        assert set(resource) == {"url", "type", "width", "height", "format", "role"}
        assert (resource["type"], resource["format"], resource["width"], resource["height"]) == (
            "image",
            "png",
            320,
            200,
        )
        assert resource["url"].startswith(server.env["MODELPORT_PUBLIC_MEDIA_URL"] + "/files/")
        got = httpx.get(resource["url"])  # a signed URL: no API key needed
        assert got.status_code == 200 and got.headers["content-type"] == "image/png"
        image = Image.open(io.BytesIO(got.content))
        assert image.format == "PNG" and image.size == (320, 200)
        image.verify()
        pixels.add(got.content)
    assert len(pixels) == 3  # the n images of one task differ

    after = balance(server, team)
    assert round((before["available_balance"] - after["available_balance"]) * 1_000_000) == 3 * PRICE_MICROS
    assert after["frozen_balance"] == 0
    assert_settled_once(ledger_report(database_url(server), team.id), [task_id], images_per_task=3)

    wait_for(lambda: task_id in receiver.by_task(), what="the webhook")
    delivered = receiver.by_task()[task_id][0]
    secret = httpx.get(server.media_url + "/api/v1/webhooks/secret", headers=team.headers).json()["data"]["secret"]
    assert secret.startswith("whsec_")
    payload = Webhook(secret).verify(delivered.body, delivered.headers)
    assert payload["type"] == "task.succeeded" and payload["data"] == task
    assert payload["timestamp"].endswith("Z")

    hooks = httpx.get(f"{server.media_url}/api/v1/tasks/{task_id}/webhooks", headers=team.headers).json()["data"]
    (delivery,) = hooks["deliveries"]
    assert delivery["webhook_id"] == delivered.headers["webhook-id"] and delivery["status"] == "delivered"
    assert delivery["attempts"][0]["status_code"] == 204 and delivery["attempts"][0]["outcome"] == "delivered"


def test_same_seed_renders_the_same_image(server: RunningServer, team: Team) -> None:
    ids = [
        create(server, team, {"prompt": "twins", "width": 96, "height": 64, "seed": 7}).json()["data"]["task_id"]
        for _ in range(2)
    ]
    ended = wait_ended(server.media_url, team, ids)
    contents = [httpx.get(ended[i]["result"]["resources"][0]["url"]).content for i in ids]
    assert contents[0] == contents[1]
    assert ended[ids[0]]["result"]["metadata"]["seed"] == 7


def test_async_suffix_and_list(server: RunningServer, team: Team) -> None:
    made = create(server, team, {"prompt": "old path"}, path=SKETCH + "/async")
    assert made.status_code == 200, made.text
    task_id = made.json()["data"]["task_id"]
    wait_ended(server.media_url, team, [task_id])
    listing = httpx.get(server.media_url + "/api/v1/tasks", params={"page_size": 1}, headers=team.headers).json()
    assert listing["data"]["tasks"][0]["task_id"] == task_id  # newest first
    assert listing["data"]["total"] >= 1 and listing["data"]["page_size"] == 1
    only = httpx.get(
        server.media_url + "/api/v1/tasks",
        params={"status": "success", "model_id": "local/sketch-image"},
        headers=team.headers,
    ).json()["data"]
    assert all(t["status"] == "success" for t in only["tasks"])
    for params, name in [
        ({"page_size": "101"}, "page_size"),
        ({"status": "done"}, "status"),
        ({"page": "0"}, "page"),
        ({"start_time": "x"}, "start_time"),
        ({"start_time": "10", "end_time": "5"}, "end_time"),
    ]:
        bad = httpx.get(server.media_url + "/api/v1/tasks", params=params, headers=team.headers)
        assert bad.status_code == 400 and name in bad.json()["message"], (params, bad.text)


def test_errors_in_the_media_shape(server: RunningServer, team: Team) -> None:
    unknown = create(server, team, {"prompt": "x"}, path="/nobody/nothing")
    assert unknown.status_code == 404 and unknown.json() == {
        "code": 404,
        "message": "Not found: model 'nobody/nothing' does not exist",
    }
    assert create(server, team, {"prompt": "x"}, path="/nobody/nothing/async").status_code == 404

    cases: list[tuple[dict[str, Any], str]] = [
        ({"prompt": "x", "style": "oil"}, "style"),
        ({"width": 100}, "prompt"),
        ({"prompt": "x", "n": 5}, "n"),
        ({"prompt": "x", "width": "wide"}, "width"),
    ]
    for body, field in cases:
        bad = create(server, team, body)
        assert bad.status_code == 400, bad.text
        assert bad.json()["message"].startswith("Invalid parameters: " + field), bad.text
    raw = httpx.post(server.media_url + SKETCH, content=b"{nope", headers=team.headers)
    assert raw.status_code == 400 and raw.json()["code"] == 400

    for url in ["http://example.com/hook", "https://user:pw@example.com/hook", "ftp://example.com/x"]:
        bad = create(server, team, {"prompt": "x"}, webhook=url)
        assert bad.status_code == 400, bad.text
        assert bad.json()["message"] == "Invalid format: X-Webhook-URL must be an https URL without userinfo"
    for url in ["https://127.0.0.1/hook", "https://10.0.0.8/hook", "https://[::1]/x", "https://0x7f.1/x"]:
        bad = create(server, team, {"prompt": "x"}, webhook=url)
        assert bad.status_code == 400 and "X-Webhook-URL" in bad.json()["message"], bad.text

    missing = httpx.get(server.media_url + "/api/v1/tasks/task_doesnotexist", headers=team.headers)
    assert missing.status_code == 404 and missing.json()["code"] == 404
    nokey = httpx.post(server.media_url + SKETCH, json={"prompt": "x"})
    assert nokey.status_code == 401 and nokey.json()["message"] == "Authentication failed: invalid team"

    # Task routes are media-host only.
    on_text = httpx.post(server.text_url + SKETCH, json={"prompt": "x"}, headers=team.headers)
    assert on_text.status_code == 404


def test_insufficient_balance_is_402_before_any_work(server: RunningServer) -> None:
    poor = make_team(server, "poor")
    got = create(server, poor, {"prompt": "x", "n": 2})
    assert got.status_code == 402
    assert got.json() == {
        "code": 402,
        "message": "Insufficient balance: the task costs 0.0040 USD, more than the team's available balance",
    }
    listing = httpx.get(server.media_url + "/api/v1/tasks", headers=poor.headers).json()["data"]
    assert listing["total"] == 0


def test_another_teams_task_is_404(server: RunningServer, team: Team) -> None:
    other = make_team(server, "others", topup_usd="5")
    task_id = create(server, team, {"prompt": "mine"}).json()["data"]["task_id"]
    for path in [f"/api/v1/tasks/{task_id}", f"/api/v1/tasks/{task_id}/webhooks"]:
        got = httpx.get(server.media_url + path, headers=other.headers)
        assert got.status_code == 404 and got.json()["code"] == 404
    cancel = httpx.post(f"{server.media_url}/api/v1/tasks/{task_id}/cancel", headers=other.headers)
    assert cancel.status_code == 404
    assert httpx.get(server.media_url + f"/api/v1/tasks/{task_id}", headers=team.headers).status_code == 200


def test_rotated_secret_old_one_still_signs(server: RunningServer, receiver: WebhookReceiver) -> None:
    rotating = make_team(server, "rotating", topup_usd="5")
    old = httpx.get(server.media_url + "/api/v1/webhooks/secret", headers=rotating.headers).json()["data"]
    rotated = httpx.post(server.media_url + "/api/v1/webhooks/secret/rotate", headers=rotating.headers).json()["data"]
    assert rotated["secret"] != old["secret"] and rotated["previous_secret_expires_at"] > rotated["created_at"]
    task_id = create(server, rotating, {"prompt": "x"}, webhook=receiver.url("/rot")).json()["data"]["task_id"]
    wait_for(lambda: task_id in receiver.by_task(), what="the webhook")
    delivered = receiver.by_task()[task_id][0]
    assert len(delivered.headers["webhook-signature"].split(" ")) == 2
    for secret in (old["secret"], rotated["secret"]):
        assert (
            json.loads(json.dumps(Webhook(secret).verify(delivered.body, delivered.headers)))["data"]["task_id"]
            == task_id
        )
