"""The replay server gives back exactly what the real APIs sent, for every recorded cassette."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests.support.cassettes import CASSETTES_DIR, Interaction, load_cassette
from tests.support.replay_upstream import ReplayUpstream, split_events

ALL_CASSETTES = sorted(CASSETTES_DIR.glob("*/*.yaml"))


def query_of(it: Interaction) -> str:
    return it.uri.split("?", 1)[1] if "?" in it.uri else ""


def send(client: httpx.Client, base_url: str, it: Interaction) -> httpx.Response:
    query = query_of(it)
    url = base_url + it.path + (f"?{query}" if query else "")
    return client.post(url, json=it.request_json, headers={"anthropic-version": "2023-06-01"})


def test_there_are_cassettes_of_each_protocol() -> None:
    folders = {p.parent.name for p in ALL_CASSETTES}
    assert folders == {"openai_chat", "openai_responses", "anthropic_messages"}
    assert len(ALL_CASSETTES) >= 45


@pytest.mark.parametrize("path", ALL_CASSETTES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_replays_every_interaction_as_recorded(path: Path) -> None:
    recorded = [it for it in load_cassette(path) if it.method == "POST"]
    with ReplayUpstream(path) as up, httpx.Client() as client:
        for it in recorded:
            r = send(client, up.base_url, it)
            assert r.status_code == it.status
            assert r.headers["content-type"] == it.response_header("content-type")
            if it.response_json is not None:
                assert r.json() == it.response_json
            else:
                assert r.text == it.sse_body
        up.assert_all_served()
        got = up.requests
        assert [g.json for g in got] == [it.request_json for it in recorded]
        assert all(g.headers["anthropic-version"] == "2023-06-01" for g in got)
        assert [g.query for g in got] == [query_of(it) for it in recorded]


def test_sse_is_written_event_by_event() -> None:
    with ReplayUpstream("anthropic_messages/test_request_stream_fallback_for_high_max_tokens", chunk_delay=0.02) as up:
        it = up.interactions[0]
        pieces = split_events(it.sse_body)
        assert "".join(pieces) == it.sse_body and len(pieces) >= 6
        with httpx.stream("POST", up.base_url + "/v1/messages?beta=true", json=it.request_json) as r:
            reads = [chunk for chunk in r.iter_raw() if chunk]
        assert b"".join(reads).decode() == it.sse_body
        assert len(reads) > 1
        assert "transfer-encoding" in r.headers and "content-length" not in r.headers


def test_a_request_beyond_the_recording_is_a_500_miss() -> None:
    with ReplayUpstream("openai_chat/test_valid_response") as up:
        body = up.interactions[0].request_json
        assert httpx.post(up.base_url + "/v1/chat/completions", json=body).status_code == 200
        extra = httpx.post(up.base_url + "/v1/chat/completions", json=body)
        assert extra.status_code == 500 and extra.json()["error"]["type"] == "replay_miss"
        wrong_path = httpx.post(up.base_url + "/v1/messages", json=body)
        assert wrong_path.status_code == 500
        assert [m.path for m in up.misses] == ["/v1/chat/completions", "/v1/messages"]
        with pytest.raises(AssertionError):
            up.assert_all_served()


def test_unserved_interactions_are_reported() -> None:
    with ReplayUpstream("openai_responses/test_openai_responses_thinking_with_modified_history") as up:
        assert up.remaining == 3
        httpx.post(up.base_url + "/v1/responses", json=up.interactions[0].request_json)
        assert up.remaining == 2
        with pytest.raises(AssertionError, match="never requested"):
            up.assert_all_served()


def test_body_matching_ignores_model_and_order() -> None:
    with ReplayUpstream("openai_responses/test_openai_responses_thinking_with_modified_history", match="body") as up:
        second = up.interactions[1]
        sent = {**second.request_json, "model": "gpt-renamed"}
        r = httpx.post(up.base_url + "/v1/responses", json=sent)
        assert r.status_code == second.status == 400
        assert r.json() == second.response_json
        assert up.served == [second]
        assert up.requests[0].json["model"] == "gpt-renamed"
        nothing = httpx.post(up.base_url + "/v1/responses", json={"model": "x", "input": "unrecorded"})
        assert nothing.status_code == 500


def test_prefixed_base_url_is_accepted() -> None:
    with ReplayUpstream("openai_chat/test_valid_response") as up:
        r = httpx.post(up.base_url + "/proxy/v1/chat/completions", json=up.interactions[0].request_json)
        assert r.status_code == 200


def test_downloads_are_skipped_unless_asked() -> None:
    name = "openai_chat/test_image_url_input_force_download"
    with ReplayUpstream(name) as up:
        assert [it.method for it in up.interactions] == ["POST"]
    with ReplayUpstream(name, include_downloads=True) as up:
        image = up.interactions[0]
        assert image.method == "GET" and isinstance(image.response_raw, bytes)
        r = httpx.get(up.url_for(image))
        assert r.status_code == 200 and r.headers["content-type"] == "image/jpeg"
        assert r.content == image.response_raw and r.content[:2] == b"\xff\xd8"


async def test_serves_async_clients() -> None:
    async with ReplayUpstream("openai_chat/test_dbos_model_stream_direct") as up, httpx.AsyncClient() as client:
        it = up.interactions[0]
        r = await client.post(up.base_url + "/v1/chat/completions", json=it.request_json)
        payloads = [line[6:] for line in r.text.splitlines() if line.startswith("data: ")]
        assert payloads[-1] == "[DONE]"
        assert json.loads(payloads[-2])["usage"]["total_tokens"] == 22
