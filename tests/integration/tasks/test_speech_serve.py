"""`local/piper-speech` through a real `modelport serve`: WAV checked with `wave`, MP3 with PyAV (format, rate,
declared duration, real sound), the speed setting, the price per 1,000 characters, the model list's
`?type=text-to-speech` rule and its docs page, refusals at creation."""

from __future__ import annotations

import io
import math
import wave
from collections.abc import Iterator
from typing import Any

import av
import httpx
import numpy as np
import pytest

from tests.integration.tasks.helpers import (
    Team,
    create,
    free_port,
    ledger_report,
    make_team,
    task_env,
    task_server,
    wait_ended,
)
from tests.support.server import RunningServer

SPEECH = "/local/piper-speech"
TEXT = "The harbour lights came on one by one. A small boat slipped out past the breakwater."
PRICE_PER_1K_MICROS = 1000  # 0.001 USD per 1,000 characters


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with task_server(tmp_path_factory.mktemp("speech"), task_env(None, free_port())) as running:
        yield running


@pytest.fixture(scope="module")
def team(server: RunningServer) -> Team:
    return make_team(server, "narrators", topup_usd="10")


def available(server: RunningServer, team: Team) -> float:
    got = httpx.get(server.media_url + "/api/v1/team/balance", headers=team.headers)
    value: float = got.json()["data"]["available_balance"]
    return value


def spoken(server: RunningServer, team: Team, body: dict[str, Any]) -> tuple[dict[str, Any], httpx.Response]:
    created = create(server, team, body, path=SPEECH)
    assert created.status_code == 200, created.text
    task_id = created.json()["data"]["task_id"]
    task = wait_ended(server.media_url, team, [task_id], timeout=120)[task_id]
    assert task["status"] == "success", task
    (resource,) = task["result"]["resources"]
    assert (resource["type"], resource["width"], resource["height"], resource["role"]) == ("audio", 0, 0, "primary")
    got = httpx.get(resource["url"], timeout=30)
    assert got.status_code == 200
    return task, got


def test_wav_is_real_speech_of_the_declared_length_and_priced_per_character(server: RunningServer, team: Team) -> None:
    task, got = spoken(server, team, {"text": TEXT})
    assert task["result"]["resources"][0]["format"] == "wav"
    assert got.headers["content-type"] == "audio/wav"
    with wave.open(io.BytesIO(got.content)) as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, 22050)
        seconds = wav.getnframes() / wav.getframerate()
        samples = np.frombuffer(wav.readframes(wav.getnframes()), dtype=np.int16).astype(np.float64)
    metadata = task["result"]["metadata"]
    assert abs(metadata["duration"] - seconds) < 0.001 and metadata["characters"] == len(TEXT)
    assert 3 < seconds < 15  # about two sentences read at a normal pace
    # Speech, not silence or a tone: loud overall, with pauses (quiet 50 ms windows) between words.
    windows = samples[: len(samples) // 1102 * 1102].reshape(-1, 1102)
    rms = np.sqrt((windows**2).mean(axis=1))
    assert rms.max() > 2000 and (rms < rms.max() / 20).sum() >= 3
    # The balance shows 4 decimals; the ledger has the exact micro-USD: every character counted.
    price = math.ceil(PRICE_PER_1K_MICROS * len(TEXT) / 1000)
    ledger = ledger_report(f"sqlite+aiosqlite:///{server.env['MODELPORT_DATA_DIR']}/modelport.db", team.id)
    assert ledger.by_task[task["task_id"]] == {"task_hold": [-price], "task_release": [price], "charge": [-price]}


def test_mp3_and_speed(server: RunningServer, team: Team) -> None:
    normal, _ = spoken(server, team, {"text": TEXT, "format": "wav"})
    task, got = spoken(server, team, {"text": TEXT, "format": "mp3", "speed": 2})
    assert task["result"]["resources"][0]["format"] == "mp3"
    assert got.headers["content-type"] == "audio/mpeg"
    with av.open(io.BytesIO(got.content), "r") as container:
        stream = container.streams.audio[0]
        assert container.format.name == "mp3" and stream.codec_context.name in ("mp3", "mp3float")
        assert stream.rate == 22050 and stream.layout.nb_channels == 1
        decoded = sum(int(frame.samples) for frame in container.decode(stream)) / 22050
    declared = task["result"]["metadata"]["duration"]
    assert abs(decoded - declared) < 0.1  # the encoder adds at most a frame or two of padding
    assert declared < normal["result"]["metadata"]["duration"] * 0.7  # twice as fast: clearly shorter


def test_listed_only_when_asked_by_type_with_a_docs_page(server: RunningServer, team: Team) -> None:
    def slugs(**params: str) -> list[str]:
        got = httpx.get(server.media_url + "/api/v1/models", params=params, headers=team.headers)
        assert got.status_code == 200, got.text
        return [m["slug"] for m in got.json()["data"]["models"]]

    assert "local/piper-speech" not in slugs()
    assert slugs(type="text-to-speech") == ["local/piper-speech"]
    assert slugs(type="video-to-video") == ["local/style-video"]
    assert "local/sketch-image" in slugs(type="text-to-image") and "local/piper-speech" not in slugs(
        type="text-to-image"
    )
    bad = httpx.get(server.media_url + "/api/v1/models", params={"type": "speech"}, headers=team.headers)
    assert bad.status_code == 400 and "type must be one of" in bad.json()["message"]

    page = httpx.get(f"{server.env['MODELPORT_PUBLIC_MEDIA_URL']}/docs/models/local/piper-speech")
    assert page.status_code == 200
    assert "0.001 USD per 1,000 characters of text" in page.text
    for name in ("text", "speed", "format"):
        assert f"<td>{name}</td>" in page.text


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({}, "text"),
        ({"text": ""}, "text"),
        ({"text": "x" * 5001}, "text"),
        ({"text": "hello", "speed": 3}, "speed"),
        ({"text": "hello", "format": "ogg"}, "format"),
        ({"text": "hello", "voice": "amy"}, "voice"),
    ],
)
def test_bad_input_is_refused(server: RunningServer, team: Team, body: dict[str, Any], param: str) -> None:
    before = available(server, team)
    got = create(server, team, body, path=SPEECH)
    assert got.status_code == 400, got.text
    assert param in got.json()["message"]
    assert available(server, team) == before


def test_nothing_to_say_fails_and_refunds(server: RunningServer, team: Team) -> None:
    before = available(server, team)
    created = create(server, team, {"text": "   "}, path=SPEECH)
    assert created.status_code == 200, created.text
    task_id = created.json()["data"]["task_id"]
    task = wait_ended(server.media_url, team, [task_id], timeout=120)[task_id]
    assert task["status"] == "failed" and task["error"]["code"] == "invalid_input", task
    assert available(server, team) == before


def test_openapi_document_links_each_embedded_models_page(server: RunningServer) -> None:
    document = httpx.get(server.media_url + "/openapi.json").json()
    create = document["paths"]["/{provider}/{model}"]["post"]
    assert create["externalDocs"]["url"] == "/docs"
    for slug in ("sketch-image", "style-transfer", "slideshow-video", "style-video", "piper-speech"):
        link = f"/docs/models/local/{slug}"
        assert f"]({link})" in create["description"]
        assert httpx.get(server.media_url + link).status_code == 200
