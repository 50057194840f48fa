"""`Idempotency-Key` through a real `modelport serve`, raw HTTP: a replayed task creation answers the first task
again (nothing frozen twice), another request with the key is a 409, keys are per team and expire; asset
registration and file upload replay too; 20 duplicates sent at once to `serve --workers 2` create one task
with one freeze (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import trustme
from sqlalchemy import func, select

from modelport.media.idempotency import prune_expired
from modelport.media.tables import idempotency_keys
from modelport.storage.db import create_engine
from tests.integration.assets.helpers import Assets, asset_server
from tests.integration.assets.helpers import make_team as unfunded_team
from tests.integration.tasks.helpers import (
    SKETCH,
    free_port,
    ledger_report,
    make_team,
    task_env,
    task_server,
)
from tests.integration.tasks.serve_calls import funded_team
from tests.support.databases import migrated_database_url
from tests.support.https_origin import HttpsOrigin
from tests.support.media_make import image
from tests.support.server import RunningServer

KEY_SECONDS = 8  # MODELPORT_TASKS__IDEMPOTENCY_KEY_SECONDS of the module's server: the replay and conflict checks
# must end inside it (4 s did not, once, on a machine loaded by four test processes)
CONFLICT = {"code": 409, "message": "Conflict: Idempotency-Key was already used for a different request"}


@pytest.fixture(scope="module")
async def origin(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[HttpsOrigin]:
    server = HttpsOrigin(trustme.CA(), tmp_path_factory.mktemp("idempotency-origin"))
    await server.start()
    yield server
    await server.stop()


@pytest.fixture(scope="module")
def server(origin: HttpsOrigin, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with asset_server(
        tmp_path_factory.mktemp("idempotency"),
        origin,
        MODELPORT_TASKS__IDEMPOTENCY_KEY_SECONDS=str(KEY_SECONDS),
    ) as running:
        yield running


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=60) as c:
        yield c


def _database(server: RunningServer) -> str:
    return f"sqlite+aiosqlite:///{Path(server.env['MODELPORT_DATA_DIR']) / 'modelport.db'}"


def _team_id(server: RunningServer, key: str) -> str:
    got = httpx.get(server.media_url + "/api/v1/team/balance", headers={"Authorization": f"Bearer {key}"})
    assert got.status_code == 200, got.text
    team_id: str = got.json()["data"]["team_id"]
    return team_id


async def test_task_replay_conflict_per_team_and_expiry(client: httpx.AsyncClient, server: RunningServer) -> None:
    key = funded_team(server, "retriers")
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": "order-7 / attempt"}
    body = {"prompt": "a lighthouse", "seed": 7}
    first = await client.post(server.media_url + SKETCH, json=body, headers=headers)
    assert first.status_code == 200, first.text
    assert "idempotent-replayed" not in first.headers
    task_id = first.json()["data"]["task_id"]

    again = await client.post(server.media_url + SKETCH, json=body, headers=headers)
    assert again.status_code == 200, again.text
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json() == first.json()  # the first answer, as it was
    # A retry that asks to wait (Prefer is not part of the request's identity) waits for the same task.
    waited = await client.post(server.media_url + SKETCH, json=body, headers={**headers, "Prefer": "wait=30"})
    assert waited.status_code == 200, waited.text
    assert (waited.headers["idempotent-replayed"], waited.headers["preference-applied"]) == ("true", "wait=30")
    assert (waited.json()["data"]["task_id"], waited.json()["data"]["status"]) == (task_id, "success")

    # The same key with another body, path or task header: 409, nothing created.
    for path, changed, extra in (
        (SKETCH, {"prompt": "a lighthouse", "seed": 8}, {}),
        (SKETCH + "/async", body, {}),
        (SKETCH, body, {"X-Task-Timeout": "100"}),
    ):
        got = await client.post(server.media_url + path, json=changed, headers={**headers, **extra})
        assert (got.status_code, got.json()) == (409, CONFLICT), got.text

    report = await asyncio.to_thread(ledger_report, _database(server), _team_id(server, key))
    assert list(report.statuses) == [task_id]
    assert report.by_task[task_id]["task_hold"] == [-2000]  # frozen once

    # Keys are per team: another team's same key is its own task.
    other_key = funded_team(server, "others")
    other = await client.post(
        server.media_url + SKETCH, json=body, headers={**headers, "Authorization": f"Bearer {other_key}"}
    )
    assert other.status_code == 200 and other.json()["data"]["task_id"] != task_id

    # Expired (MODELPORT_TASKS__IDEMPOTENCY_KEY_SECONDS): the key is new again.
    await asyncio.sleep(KEY_SECONDS + 0.5)
    later = await client.post(server.media_url + SKETCH, json=body, headers=headers)
    assert later.status_code == 200 and "idempotent-replayed" not in later.headers
    assert later.json()["data"]["task_id"] != task_id

    # Expired keys are pruned (the retention pruner's call).
    engine = create_engine(_database(server))
    try:
        await asyncio.sleep(KEY_SECONDS + 0.5)
        assert await prune_expired(engine) >= 2
        async with engine.connect() as conn:
            left = (await conn.execute(select(func.count()).select_from(idempotency_keys))).scalar_one()
        assert left == 0
    finally:
        await engine.dispose()


async def test_bad_keys_and_refusals_are_not_remembered(client: httpx.AsyncClient, server: RunningServer) -> None:
    key = unfunded_team(server, "careful", asset_service=False)
    auth = {"Authorization": f"Bearer {key}"}
    for bad in (b"", b"x" * 256, "caf\u00e9".encode(), b"tab\tkey"):
        got = await client.post(
            server.media_url + SKETCH,
            json={"prompt": "p"},
            headers=[(b"Authorization", f"Bearer {key}".encode()), (b"Idempotency-Key", bad)],
        )
        assert got.status_code == 400, got.text
        assert "Idempotency-Key" in got.json()["message"]
    # A refused creation (402: no balance) frees its key: after a top-up the same key creates the task.
    headers = {**auth, "Idempotency-Key": "k-402"}
    refused = await client.post(server.media_url + SKETCH, json={"prompt": "p"}, headers=headers)
    assert refused.status_code == 402, refused.text
    topup = await client.post(
        f"{server.media_url}/admin/v1/teams/careful/topups",
        json={"amount_usd": "1"},
        headers={"Authorization": "Bearer assets-test-admin-token-0123456789"},
    )
    assert topup.status_code == 200, topup.text
    created = await client.post(server.media_url + SKETCH, json={"prompt": "p"}, headers=headers)
    assert created.status_code == 200 and "idempotent-replayed" not in created.headers


async def test_asset_registration_and_file_upload_replay(
    client: httpx.AsyncClient, server: RunningServer, origin: HttpsOrigin
) -> None:
    key = funded_team(server, "uploaders")
    auth = {"Authorization": f"Bearer {key}"}
    png = image(640, 480)
    url = origin.serve("idem.png", png, "image/png")
    assets = Assets(client, server, key)
    register = f"{server.media_url}/api/v1/media/providers/vendorA/assets"
    body = {"url": url, "type": "image", "name": "idem"}
    first = await client.post(register, json=body, headers={**auth, "Idempotency-Key": "asset-1"})
    assert first.status_code == 200, first.text
    again = await client.post(register, json=body, headers={**auth, "Idempotency-Key": "asset-1"})
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert again.json()["data"]["asset_id"] == first.json()["data"]["asset_id"]
    other = await client.post(register, json={**body, "name": "other"}, headers={**auth, "Idempotency-Key": "asset-1"})
    assert (other.status_code, other.json()) == (409, CONFLICT)
    listed = (await assets.list()).json()["data"]
    assert listed["total"] == 1, listed

    files = f"{server.media_url}/api/v1/media/files"
    form = {"file": ("a.png", png, "image/png")}
    up = await client.post(files, files=form, headers={**auth, "Idempotency-Key": "file-1"})
    assert up.status_code == 200, up.text
    # httpx draws a new multipart boundary per request: send the first body's exact bytes again.
    request = client.build_request("POST", files, files=form, headers={**auth, "Idempotency-Key": "file-2"})
    raw = request.read()
    sent = [
        await client.post(files, content=raw, headers={**auth, "Idempotency-Key": "file-2", **_ctype(request)})
        for _ in range(2)
    ]
    assert [r.status_code for r in sent] == [200, 200], sent[0].text
    assert sent[1].headers["idempotent-replayed"] == "true"
    assert sent[0].json()["data"]["file_id"] == sent[1].json()["data"]["file_id"]
    other_file = {"file": ("a.png", image(640, 481), "image/png")}
    different = await client.post(files, files=other_file, headers={**auth, "Idempotency-Key": "file-2"})
    assert (different.status_code, different.json()) == (409, CONFLICT)
    listing = (await client.get(files, headers=auth)).json()["data"]
    assert listing["total"] == 2, listing  # file-1 and file-2, each stored once


async def test_an_upload_retried_with_a_new_boundary_is_replayed(
    client: httpx.AsyncClient, server: RunningServer
) -> None:
    """Issue 33 item 10: the fingerprint of an upload is what its form says, not its multipart framing."""
    key = funded_team(server, "boundary-retriers")
    auth = {"Authorization": f"Bearer {key}"}
    files = f"{server.media_url}/api/v1/media/files"
    png = image(320, 240)
    form = {"file": ("photo.png", png, "image/png")}
    fields = {"purpose": "avatar"}
    sent = [
        await client.post(files, files=form, data=fields, headers={**auth, "Idempotency-Key": "retried-upload"})
        for _ in range(2)
    ]
    assert [r.status_code for r in sent] == [200, 200], sent[1].text
    assert "idempotent-replayed" not in sent[0].headers and sent[1].headers["idempotent-replayed"] == "true"
    assert sent[0].json()["data"]["file_id"] == sent[1].json()["data"]["file_id"]
    # The same retry by hand: another boundary, the part headers in another order and case, the parts too.
    boundary = "another-library-boundary"
    raw = (
        f"--{boundary}\r\ncontent-type: image/png\r\n"
        f'content-disposition: form-data; name="file"; filename="photo.png"\r\n\r\n'
    ).encode()
    raw += png + f'\r\n--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\navatar'.encode()
    raw += f"\r\n--{boundary}--\r\n".encode()
    by_hand = await client.post(
        files,
        content=raw,
        headers={
            **auth,
            "Idempotency-Key": "retried-upload",
            "Content-Type": f"multipart/form-data; boundary={boundary}",
        },
    )
    assert by_hand.status_code == 200, by_hand.text
    assert by_hand.json()["data"]["file_id"] == sent[0].json()["data"]["file_id"]
    # What the form says still counts: another file name, content type, field value or file bytes is a 409.
    changed: list[tuple[dict[str, tuple[str, bytes, str]], dict[str, str]]] = [
        ({"file": ("other.png", png, "image/png")}, fields),
        ({"file": ("photo.png", png, "application/octet-stream")}, fields),
        (form, {"purpose": "banner"}),
        (form, {}),
        ({"file": ("photo.png", png + b"\0", "image/png")}, fields),
    ]
    for other_form, other_fields in changed:
        refused = await client.post(
            files, files=other_form, data=other_fields, headers={**auth, "Idempotency-Key": "retried-upload"}
        )
        assert (refused.status_code, refused.json()) == (409, CONFLICT), (other_form["file"][0], other_fields)
    listing = (await client.get(files, headers=auth)).json()["data"]
    assert listing["total"] == 1, listing


def _ctype(request: httpx.Request) -> dict[str, str]:
    return {"Content-Type": request.headers["content-type"]}


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_concurrent_duplicates_across_two_workers_create_one_task(backend: str, tmp_path: Path) -> None:
    async def run() -> None:
        (tmp_path / "db").mkdir()
        async with migrated_database_url(backend, tmp_path / "db") as url:
            await asyncio.to_thread(_duplicates, tmp_path, url)

    asyncio.run(run())


def _duplicates(tmp_path: Path, url: str) -> None:
    env = task_env(None, free_port(), MODELPORT_DATABASE_URL=url)
    (tmp_path / "db").mkdir(exist_ok=True)
    with task_server(tmp_path, env, "--workers", "2") as server:
        team = make_team(server, "burst", topup_usd="1")
        headers = {**team.headers, "Idempotency-Key": "same-for-all"}
        start = time.monotonic() + 0.5

        def send(_: int) -> httpx.Response:
            time.sleep(max(0.0, start - time.monotonic()))  # all at once
            with httpx.Client(timeout=60) as c:
                return c.post(server.media_url + SKETCH, json={"prompt": "burst", "seed": 1}, headers=headers)

        with ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(send, range(20)))
        assert [a.status_code for a in answers] == [200] * 20, [a.text for a in answers if a.status_code != 200]
        assert len({a.json()["data"]["task_id"] for a in answers}) == 1
        assert sum(1 for a in answers if "idempotent-replayed" not in a.headers) == 1
        report = ledger_report(url, team.id)
        assert len(report.statuses) == 1
        (kinds,) = report.by_task.values()
        assert kinds["task_hold"] == [-2000]
