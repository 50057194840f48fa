"""Webhook and input URLs whose names resolve to non-global addresses are refused when the task is created
(400 at once), not only at delivery or at the run (issue 21 item 11); the delivery-time check stays, and an
allow-listed named host (`localhost:<port>` in MODELPORT_NET__ALLOW_HOSTS) keeps working."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.tasks.helpers import (
    Team,
    WebhookReceiver,
    create,
    free_port,
    make_team,
    task_env,
    task_server,
)
from tests.support.server import RunningServer

NAMES = ["localhost", "LOCALHOST", "localhost.", "LOCALHOST.", "LocalHost"]


@pytest.fixture(scope="module")
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver().running() as running:
        yield running


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, receiver: WebhookReceiver) -> Iterator[RunningServer]:
    # The receiver allow-listed by name, as a test or private deployment would configure it.
    env = task_env(receiver, free_port(), MODELPORT_NET__ALLOW_HOSTS=f"localhost:{receiver.port}")
    with task_server(tmp_path_factory.mktemp("url-at-creation"), env) as running:
        yield running


@pytest.fixture(scope="module")
def team(server: RunningServer) -> Team:
    return make_team(server, "url-checkers", topup_usd="100")


@pytest.mark.parametrize("name", NAMES)
def test_a_loopback_webhook_name_is_400_at_creation(server: RunningServer, team: Team, name: str) -> None:
    bad = create(server, team, {"prompt": "x"}, webhook=f"https://{name}/a.png")
    assert bad.status_code == 400, bad.text
    message = bad.json()["message"]
    assert "X-Webhook-URL" in message and "not fetch" in message, message


@pytest.mark.parametrize("name", NAMES)
def test_a_loopback_input_url_name_is_400_at_creation(server: RunningServer, team: Team, name: str) -> None:
    bad = create(server, team, {"image_url": f"https://{name}/a.png"}, path="/local/style-transfer")
    assert bad.status_code == 400, bad.text
    assert bad.json()["message"].startswith("Invalid parameters: image_url"), bad.text
    listed = httpx.get(server.media_url + "/api/v1/tasks", headers=team.headers, timeout=30).json()["data"]
    assert all(t["model_id"] != "local/style-transfer" for t in listed["tasks"])  # nothing was created


def test_an_allow_listed_named_host_still_gets_its_webhook(
    server: RunningServer, team: Team, receiver: WebhookReceiver
) -> None:
    created = create(server, team, {"prompt": "x"}, webhook=f"http://localhost:{receiver.port}/hook")
    assert created.status_code == 200, created.text
    task_id = created.json()["data"]["task_id"]
    deadline = time.monotonic() + 120
    while task_id not in receiver.by_task(delivered=True) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert task_id in receiver.by_task(delivered=True)
