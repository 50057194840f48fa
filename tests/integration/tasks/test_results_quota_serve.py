"""Media task results are files of the team (listed, deletable) but not uploads: they do not use up the
upload quota, so a team that generates many images can still upload. Through a real `modelport serve`."""

from __future__ import annotations

import io
from pathlib import Path

import httpx
from PIL import Image

from tests.integration.tasks.helpers import Team, create, free_port, make_team, task_env, task_server, wait_ended


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (40, 40), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


def _upload(media_url: str, team: Team, name: str) -> httpx.Response:
    files = {"file": (name, _png(), "image/png")}
    return httpx.post(media_url + "/api/v1/media/files", headers=team.headers, files=files, timeout=30)


def test_task_results_do_not_use_up_the_upload_quota(tmp_path: Path) -> None:
    env = task_env(None, free_port(), MODELPORT_FILES__QUOTA_FILES="2")
    with task_server(tmp_path, env) as server:
        team = make_team(server, "generators", topup_usd="10")
        made = create(server, team, {"prompt": "three boats", "width": 64, "height": 64, "n": 3})
        assert made.status_code == 200, made.text
        task_id = made.json()["data"]["task_id"]
        task = wait_ended(server.media_url, team, [task_id])[task_id]
        assert task["status"] == "success", task

        # Three results held, quota of two files: uploads still fit, up to the quota of uploads.
        first = _upload(server.media_url, team, "a.png")
        assert first.status_code == 200, first.text
        assert _upload(server.media_url, team, "b.png").status_code == 200
        third = _upload(server.media_url, team, "c.png")
        assert third.status_code == 413 and "upload quota" in third.json()["message"]

        # Results stay listed with the uploads (deletable there); deleting an upload frees upload quota.
        listed = httpx.get(server.media_url + "/api/v1/media/files", headers=team.headers, timeout=30).json()["data"]
        names = sorted(f["name"] for f in listed["files"])
        assert names == sorted(["a.png", "b.png", *(f"{task_id}-{i}.png" for i in (1, 2, 3))]), names
        gone = httpx.delete(
            f"{server.media_url}/api/v1/media/files/{first.json()['data']['file_id']}", headers=team.headers
        )
        assert gone.status_code == 200, gone.text
        assert _upload(server.media_url, team, "c.png").status_code == 200
