"""A task that outlives its model's deadline fails and is refunded, and its late render changes nothing."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests.integration.tasks.helpers import (
    WebhookReceiver,
    create,
    free_port,
    ledger_report,
    make_team,
    task_env,
    task_server,
    wait_ended,
    wait_for,
)

CATALOG = """
[[media_models]]
slug = "local/sketch-image"
type = "text-to-image"
description = "sketch with a very short deadline"
docs_url = "/docs/models/local/sketch-image"
runner = "sketch"
price_usd = "0.002"
price_unit = "image"
deadline_seconds = 0.5
"""


def test_deadline_fails_refunds_and_the_late_result_is_dropped(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(CATALOG)
    with WebhookReceiver().running() as receiver:
        env = task_env(receiver, free_port(), MODELPORT_CATALOG=str(catalog))
        with task_server(tmp_path / "data", env) as server:
            team = make_team(server, "late", topup_usd="5")
            made = create(
                server, team, {"prompt": "slow", "width": 1536, "height": 1536, "n": 2}, webhook=receiver.url()
            )
            assert made.status_code == 200, made.text
            task_id = made.json()["data"]["task_id"]
            task = wait_ended(server.media_url, team, [task_id], timeout=30)[task_id]
            assert task["status"] == "failed" and task["error"]["code"] == "deadline_exceeded", task
            assert task["result"]["resources"] == [] and task["result_expires_at"] is None
            wait_for(lambda: task_id in receiver.by_task(), what="the task.failed webhook")
            assert '"type":"task.failed"' in receiver.by_task()[task_id][0].body
            balance = httpx.get(server.media_url + "/api/v1/team/balance", headers=team.headers).json()["data"]
            assert balance["available_balance"] == 5 and balance["frozen_balance"] == 0
            time.sleep(4)  # let the render thread finish: its success must lose the compare-and-swap
            again = httpx.get(f"{server.media_url}/api/v1/tasks/{task_id}", headers=team.headers).json()["data"]
            assert again["status"] == "failed"
            files = httpx.get(server.media_url + "/api/v1/media/files", headers=team.headers).json()["data"]
            assert files["total"] == 0
        report = ledger_report(f"sqlite+aiosqlite:///{tmp_path / 'data' / 'modelport.db'}", team.id)
        assert report.by_task[task_id] == {"task_hold": [-4000], "task_release": [4000]}
        assert report.entries_sum == report.balance_micros == 5_000_000 and report.frozen_micros == 0
        assert not [p for p in (tmp_path / "data" / "media").rglob("file_*") if p.is_file()]
