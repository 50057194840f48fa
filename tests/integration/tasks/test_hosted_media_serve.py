"""Hosted media providers through a real `modelport serve` (two worker processes) against a fake provider
run as a real local HTTP server: OpenAI-compatible images (generations, edits) and speech, and a
Replicate-style submit-and-poll API, all configured in the catalog. For each kind: success (the output
copied into our store and checked), a provider failure (task failed, refunded), 429s waited out per
`Retry-After`, a provider that never finishes (deadline, refunded), and an output URL at a private address
(refused, refunded). Plus: the provider key is sent, and the per-provider concurrency limit holds across
both worker processes."""

from __future__ import annotations

import asyncio
import io
import itertools
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import av
import httpx
import pytest
from PIL import Image

from tests.integration.tasks.helpers import Team, free_port, make_team, task_env, task_server
from tests.support.fake_media_provider import API_KEY, FakeMediaProvider, png
from tests.support.media_make import clip_with_audio, mp3
from tests.support.server import RunningServer

KEY_ENV = "FAKE_MEDIA_PROVIDER_KEY"


def catalog(base: str) -> str:
    def entry(slug: str, kind: str, price: str, unit: str, deadline: float, schema: dict[str, Any], **up: Any) -> str:
        upstream = {"kind": kind, "api_key_env": KEY_ENV, **up}
        return (
            "[[media_models]]\n"
            f"slug = {json.dumps(slug)}\ntype = {json.dumps(schema.pop('_type'))}\n"
            f'description = "fake"\ndocs_url = "/docs/models/{slug}"\n'
            f'price_usd = "{price}"\nprice_unit = "{unit}"\ndeadline_seconds = {deadline}\n'
            f"input_schema = {_toml(schema)}\nupstream = {_toml(upstream)}\n\n"
        )

    image_schema = {
        "_type": "text-to-image",
        "type": "object",
        "additionalProperties": False,
        "required": ["prompt"],
        "properties": {"prompt": {"type": "string"}, "n": {"type": "integer", "minimum": 1, "maximum": 4}},
    }
    edit_schema = {
        "_type": "image-to-image",
        "type": "object",
        "additionalProperties": False,
        "required": ["prompt", "image_url"],
        "properties": {"prompt": {"type": "string"}, "image_url": {"type": "string"}},
    }
    speech_schema = {
        "_type": "text-to-speech",
        "type": "object",
        "additionalProperties": False,
        "required": ["text"],
        "properties": {"text": {"type": "string"}, "voice": {"type": "string"}},
    }
    video_schema = {
        "_type": "text-to-video",
        "type": "object",
        "additionalProperties": False,
        "required": ["prompt"],
        "properties": {"prompt": {"type": "string"}, "duration": {"type": "integer", "minimum": 1, "maximum": 10}},
    }
    openai = {"name": "openai-fake", "base_url": base + "/v1", "model": "img-1"}
    poll = {
        "base_url": base,
        "submit_path": "/v1/predictions",
        "input_field": "input",
        "status_path": "/v1/predictions/{id}",
        "output_path": "output",
        "error_path": "error",
        "poll_initial_seconds": 0.2,
        "poll_max_seconds": 0.5,
    }
    return "".join(
        [
            entry("fake/images", "openai_images", "0.01", "image", 60, dict(image_schema), **openai),
            entry("fake/images-slow", "openai_images", "0.01", "image", 3, dict(image_schema), **openai),
            entry(
                "fake/edits",
                "openai_image_edits",
                "0.01",
                "image",
                60,
                dict(edit_schema),
                url_fields=["image_url"],
                **openai,
            ),
            entry(
                "fake/speech", "openai_speech", "1", "1k_characters", 60, dict(speech_schema), voice="alloy", **openai
            ),
            entry("fake/speech-slow", "openai_speech", "1", "1k_characters", 3, dict(speech_schema), **openai),
            entry("fake/video", "submit_poll", "0.05", "second", 60, dict(video_schema), name="poll-fake", **poll),
            entry("fake/video-slow", "submit_poll", "0.05", "second", 3, dict(video_schema), name="poll-fake", **poll),
            entry(
                "fake/video-cancellable",
                "submit_poll",
                "0.05",
                "second",
                60,
                dict(video_schema),
                name="poll-fake",
                progress_path="progress",
                cancel_path="/v1/predictions/{id}/cancel",
                **poll,
            ),
            entry(
                "fake/video-limited",
                "submit_poll",
                "0.05",
                "second",
                60,
                dict(video_schema),
                name="limited-fake",
                max_concurrency=1,
                **poll,
            ),
        ]
    )


def _toml(value: Any) -> str:
    """An inline TOML value (JSON's syntax is TOML's for these shapes, except for objects)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


@pytest.fixture(scope="module")
async def provider() -> AsyncIterator[FakeMediaProvider]:
    fake = FakeMediaProvider(speech_bytes=mp3(1.0), video_bytes=clip_with_audio(96, 64, 1, 8), hold_seconds=1.0)
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture(scope="module")
def server(provider: FakeMediaProvider, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    data_dir = tmp_path_factory.mktemp("upstream-media")
    catalog_file = Path(data_dir) / "catalog.toml"
    catalog_file.write_text(catalog(provider.base_url))
    env = task_env(
        None,
        free_port(),
        MODELPORT_CATALOG=str(catalog_file),
        MODELPORT_NET__ALLOW_HOSTS=provider.host,
        **{KEY_ENV: API_KEY},
    )
    with task_server(data_dir / "data", env, "--workers", "2") as running:
        yield running


@pytest.fixture(scope="module")
def team(server: RunningServer) -> Team:
    return make_team(server, "producers", topup_usd="50")


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=60) as c:
        yield c


async def balance(client: httpx.AsyncClient, server: RunningServer, team: Team) -> float:
    got = await client.get(server.media_url + "/api/v1/team/balance", headers=team.headers)
    value: float = got.json()["data"]["available_balance"]
    return value


async def run(
    client: httpx.AsyncClient, server: RunningServer, team: Team, slug: str, body: dict[str, Any], wait: float = 60
) -> dict[str, Any]:
    created = await client.post(f"{server.media_url}/{slug}", json=body, headers=team.headers)
    assert created.status_code == 200, created.text
    task_id = created.json()["data"]["task_id"]
    for _ in range(int(wait * 10)):
        got = await client.get(f"{server.media_url}/api/v1/tasks/{task_id}", headers=team.headers)
        data: dict[str, Any] = got.json()["data"]
        if data["status"] in ("success", "failed", "cancelled"):
            return data
        await asyncio.sleep(0.1)
    raise AssertionError(f"task {task_id} did not end in {wait} s")


async def download(client: httpx.AsyncClient, resource: dict[str, Any]) -> bytes:
    got = await client.get(resource["url"])
    assert got.status_code == 200
    return got.content


# Each kind: the model, a body whose text carries the behaviour word, and how to check a success.
KINDS = {
    "images": ("fake/images", "prompt", "fake/images-slow"),
    "edits": ("fake/edits", "prompt", None),
    "speech": ("fake/speech", "text", "fake/speech-slow"),
    "submit_poll": ("fake/video", "prompt", "fake/video-slow"),
}


def body_for(kind: str, word: str, image_url: str | None = None) -> dict[str, Any]:
    field = KINDS[kind][1]
    body: dict[str, Any] = {field: f"a lighthouse for {kind} ({word})"}
    if kind == "edits":
        body["image_url"] = image_url
    if kind == "submit_poll":
        body["duration"] = 2
    return body


@pytest.fixture(scope="module")
async def own_image(server: RunningServer, team: Team) -> str:
    async with httpx.AsyncClient(timeout=30) as c:
        got = await c.post(
            server.media_url + "/api/v1/media/files",
            files={"file": ("in.png", png(120, 90), "image/png")},
            headers=team.headers,
        )
    assert got.status_code == 200, got.text
    url: str = got.json()["data"]["download_url"]
    return url


async def test_images_success_b64_and_url_outputs_copied_into_our_store(
    client: httpx.AsyncClient, server: RunningServer, team: Team, provider: FakeMediaProvider
) -> None:
    before = await balance(client, server, team)
    task = await run(client, server, team, "fake/images", {"prompt": "two boats", "n": 2})
    assert task["status"] == "success", task
    sizes = []
    for resource in task["result"]["resources"]:
        assert (resource["type"], resource["format"]) == ("image", "png")
        image = Image.open(io.BytesIO(await download(client, resource)))
        assert image.size == (resource["width"], resource["height"])
        assert resource["url"].startswith(server.env["MODELPORT_PUBLIC_MEDIA_URL"])  # our store, not the provider's
        sizes.append(image.size)
    assert sizes == [(64, 48), (65, 48)] and task["result"]["metadata"]["image_count"] == 2
    assert round((before - await balance(client, server, team)) * 10_000) == 200  # 2 images x 0.01 USD
    sent = provider.calls("/images/generations", "two boats")[0]
    assert sent.authorization == f"Bearer {API_KEY}" and sent.body["model"] == "img-1" and sent.body["n"] == 2

    by_url = await run(client, server, team, "fake/images", {"prompt": "a url please"})
    assert by_url["status"] == "success", by_url
    assert Image.open(io.BytesIO(await download(client, by_url["result"]["resources"][0]))).size == (80, 60)


async def test_edits_send_the_image_and_speech_returns_audio(
    client: httpx.AsyncClient, server: RunningServer, team: Team, provider: FakeMediaProvider, own_image: str
) -> None:
    edited = await run(client, server, team, "fake/edits", {"prompt": "make it green", "image_url": own_image})
    assert edited["status"] == "success", edited
    image = Image.open(io.BytesIO(await download(client, edited["result"]["resources"][0]))).convert("RGB")
    assert image.size == (120, 90) and image.getpixel((5, 5)) == (10, 200, 10)
    assert provider.calls("/images/edits", "make it green")[0].body["image"] == "<file image_url.png>"

    spoken = await run(client, server, team, "fake/speech", {"text": "hello there"})
    assert spoken["status"] == "success", spoken
    resource = spoken["result"]["resources"][0]
    assert (resource["type"], resource["format"], resource["width"], resource["height"]) == ("audio", "mp3", 0, 0)
    with av.open(io.BytesIO(await download(client, resource)), "r") as container:
        assert container.streams.audio[0].rate == 16000
    assert provider.calls("/audio/speech", "hello there")[0].body["voice"] == "alloy"


async def test_submit_poll_success_downloads_the_video(
    client: httpx.AsyncClient, server: RunningServer, team: Team, provider: FakeMediaProvider
) -> None:
    before = await balance(client, server, team)
    task = await run(client, server, team, "fake/video", {"prompt": "a video of waves", "duration": 2})
    assert task["status"] == "success", task
    resource = task["result"]["resources"][0]
    assert (resource["type"], resource["format"], resource["width"], resource["height"]) == ("video", "mp4", 96, 64)
    with av.open(io.BytesIO(await download(client, resource)), "r") as container:
        assert container.streams.video[0].average_rate == 8 and container.streams.audio
    submitted = provider.calls("/v1/predictions", "a video of waves")[0]
    assert submitted.body == {"input": {"prompt": "a video of waves", "duration": 2}}
    assert round((before - await balance(client, server, team)) * 10_000) == 1000  # 2 s x 0.05 USD


@pytest.mark.parametrize("kind", sorted(KINDS))
async def test_provider_failure_fails_and_refunds(
    client: httpx.AsyncClient, server: RunningServer, team: Team, kind: str, own_image: str
) -> None:
    before = await balance(client, server, team)
    task = await run(client, server, team, KINDS[kind][0], body_for(kind, "fail", own_image))
    assert task["status"] == "failed", task
    expected = "upstream_failed" if kind == "submit_poll" else "upstream_rejected"
    assert task["error"]["code"] == expected, task
    said = "crashed on this input" if kind == "submit_poll" else "rejected by the safety system"
    assert said in task["error"]["message"]
    assert await balance(client, server, team) == before


async def test_5xx_is_retried_then_fails_and_refunds(
    client: httpx.AsyncClient, server: RunningServer, team: Team, provider: FakeMediaProvider
) -> None:
    before = await balance(client, server, team)
    task = await run(client, server, team, "fake/images", body_for("images", "crash"))
    assert task["status"] == "failed" and task["error"]["code"] == "upstream_error", task
    assert "answered 500" in task["error"]["message"]
    calls = provider.calls("/images/generations", "crash")
    assert [c.status for c in calls] == [500] * 4  # four attempts, 1, 2 and 4 s apart
    gaps = [b.at - a.at for a, b in itertools.pairwise(calls)]
    assert all(gap >= least for gap, least in zip(gaps, [0.9, 1.9, 3.9], strict=True)), gaps
    assert await balance(client, server, team) == before


@pytest.mark.parametrize("kind", sorted(KINDS))
async def test_429_is_waited_out_per_retry_after(
    client: httpx.AsyncClient, server: RunningServer, team: Team, provider: FakeMediaProvider, kind: str, own_image: str
) -> None:
    body = body_for(kind, "busy", own_image)
    task = await run(client, server, team, KINDS[kind][0], body)
    assert task["status"] == "success", task
    text = body[KINDS[kind][1]]
    path = {"images": "/images/generations", "edits": "/images/edits", "speech": "/audio/speech"}.get(
        kind, "/v1/predictions"
    )
    calls = [c for c in provider.calls(path) if c.body is None or text in str(c.body)]
    if kind == "submit_poll":  # the submit got two 429s first
        calls = [c for c in provider.calls("/v1/predictions", text)]
    statuses = [c.status for c in calls]
    assert statuses[:3] == [429, 429, statuses[2]] and statuses[2] != 429, statuses
    gaps = [b.at - a.at for a, b in itertools.pairwise(calls[:3])]
    assert all(gap >= 0.9 for gap in gaps), gaps  # Retry-After: 1 honoured each time


@pytest.mark.parametrize("kind", ["images", "speech", "submit_poll"])
async def test_a_provider_that_never_finishes_hits_the_deadline_and_refunds(
    client: httpx.AsyncClient, server: RunningServer, team: Team, kind: str
) -> None:
    slow = KINDS[kind][2]
    assert slow is not None
    before = await balance(client, server, team)
    task = await run(client, server, team, slow, body_for(kind, "never"), wait=60)
    assert task["status"] == "failed" and task["error"]["code"] == "deadline_exceeded", task
    assert await balance(client, server, team) == before


@pytest.mark.parametrize("kind", ["images", "submit_poll"])
async def test_an_output_url_at_a_private_address_is_refused(
    client: httpx.AsyncClient, server: RunningServer, team: Team, provider: FakeMediaProvider, kind: str
) -> None:
    before = await balance(client, server, team)
    downloads = len(provider.calls("/files/"))
    task = await run(client, server, team, KINDS[kind][0], body_for(kind, "private"))
    assert task["status"] == "failed", task
    assert task["error"]["code"] == "output_refused" and "address" in task["error"]["message"], task
    assert await balance(client, server, team) == before
    assert len(provider.calls("/files/")) == downloads  # refused before connecting


async def test_concurrency_limit_holds_across_worker_processes(
    client: httpx.AsyncClient, server: RunningServer, team: Team, provider: FakeMediaProvider
) -> None:
    bodies = [{"prompt": f"hold video {i}", "duration": 1} for i in range(3)]
    tasks = await asyncio.gather(*(run(client, server, team, "fake/video-limited", b) for b in bodies))
    assert [t["status"] for t in tasks] == ["success"] * 3, tasks
    assert provider.max_active == 1
    claimed = {t["task_id"] for t in tasks}
    assert len(claimed) == 3


async def test_provider_progress_is_mapped_and_a_cancel_reaches_the_provider(
    client: httpx.AsyncClient, server: RunningServer, team: Team, provider: FakeMediaProvider
) -> None:
    before = await balance(client, server, team)
    body = {"prompt": "a lighthouse to stop (never)", "duration": 2}
    created = await client.post(f"{server.media_url}/fake/video-cancellable", json=body, headers=team.headers)
    assert created.status_code == 200, created.text
    task_id = created.json()["data"]["task_id"]
    seen: list[int] = []
    for _ in range(600):
        data = (await client.get(f"{server.media_url}/api/v1/tasks/{task_id}", headers=team.headers)).json()["data"]
        assert data["status"] in ("queued", "processing"), data
        if data["progress"] is not None and data["progress"] not in seen:
            seen.append(data["progress"])
        if len(seen) >= 2:
            break
        await asyncio.sleep(0.1)
    assert len(seen) >= 2 and seen == sorted(seen) and all(p % 10 == 0 for p in seen), seen  # the provider's

    cancelled = await client.post(f"{server.media_url}/api/v1/tasks/{task_id}/cancel", headers=team.headers)
    assert cancelled.status_code == 200 and cancelled.json()["data"]["status"] == "cancelled", cancelled.text
    assert await balance(client, server, team) == before
    for _ in range(100):
        if [c for c in provider.calls("/cancel") if c.status == 200]:
            break
        await asyncio.sleep(0.1)
    (call,) = [c for c in provider.calls("/cancel") if c.status == 200]
    job = call.path.split("/")[3]
    assert provider.jobs[job].prompt == body["prompt"]
