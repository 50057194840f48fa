"""The same-protocol fast path forwards the client's request byte for byte but for `model` (issue 20): recorded
real requests, sent in a spelling no JSON library of ours would produce (spaces after separators, non-ASCII
escaped), must reach the upstream as the very same bytes with only the model name spliced in, for Chat and
Responses (and Messages), streaming and not, with and without a cap of the client's own. No output cap is
added: the team's credit covers the model's maximum output."""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx
import pytest

from tests.integration.conformance_gateway.replay_gateway import CLIENT_PATH, ReplayGateway, Slot
from tests.integration.conformance_gateway.sse_wire import read_stream
from tests.support.cassettes import Interaction


def _cap(field: str, value: int) -> dict[str, Any]:
    return {field: value}


# (slot, a cap the client adds to the recorded request, if any)
CASES: list[tuple[Slot, dict[str, Any]]] = [
    (Slot("bytes-chat", "openai_chat/test_valid_response"), {}),
    (Slot("bytes-chat-own-cap", "openai_chat/test_max_completion_tokens[o3-mini]"), {}),
    (Slot("bytes-chat-added-cap", "openai_chat/test_valid_response"), _cap("max_tokens", 77)),
    (Slot("bytes-chat-stream", "openai_chat/test_dbos_model_stream_direct"), {}),
    (Slot("bytes-chat-stream-cap", "openai_chat/test_dbos_model_stream_direct"), _cap("max_completion_tokens", 9)),
    (Slot("bytes-responses", "openai_responses/test_openai_responses_model_simple_response"), {}),
    (
        Slot("bytes-responses-cap", "openai_responses/test_openai_responses_model_simple_response"),
        _cap("max_output_tokens", 300),
    ),
    (Slot("bytes-responses-stream", "openai_responses/test_openai_responses_streaming_usage"), {}),
    (
        Slot("bytes-responses-stream-cap", "openai_responses/test_openai_responses_streaming_usage"),
        _cap("max_output_tokens", 5000),
    ),
    (Slot("bytes-messages", "anthropic_messages/test_anthropic_model_instructions"), {}),
    (Slot("bytes-messages-stream", "anthropic_messages/test_anthropic_model_thinking_part_stream"), {}),
]
SLOTS = [slot for slot, _ in CASES]


def _client_spelling(body: dict[str, Any]) -> bytes:
    """`json.dumps` defaults: `", "` and `": "` separators and \\u escapes, unlike any compact serialiser."""
    return json.dumps(body).encode()


def _send(gw: ReplayGateway, path: str, raw: bytes, stream: bool) -> None:
    headers = {**gw.auth_headers(), "content-type": "application/json"}
    url = gw.server.text_url + path
    if stream:
        with httpx.stream("POST", url, content=raw, headers=headers, timeout=30) as response:
            assert response.status_code == 200
            assert read_stream(response)
        return
    response = httpx.post(url, content=raw, headers=headers, timeout=30)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(("slot", "cap"), CASES, ids=[slot.name for slot in SLOTS])
def test_upstream_gets_the_clients_bytes_but_for_the_model(gw: ReplayGateway, slot: Slot, cap: dict[str, Any]) -> None:
    replay = gw.replay(slot)
    for n, it in enumerate(gw.interactions(slot)):
        recorded = _recorded(it, cap)
        client = {**recorded, "model": slot.model_id}  # same key order: `model` stays where the client put it
        raw = _client_spelling(client)
        assert raw != json.dumps(client, separators=(",", ":"), ensure_ascii=False).encode()  # not compact
        path = CLIENT_PATH[slot.folder] + ("?beta=true" if "?beta=true" in it.uri else "")
        _send(gw, path, raw, bool(client.get("stream")))
        sent = replay.requests[n].body
        assert sent == _client_spelling(recorded), f"{it.id}: the upstream got other bytes"
    replay.assert_all_served()


def _recorded(it: Interaction, cap: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(it.request_json)
    assert isinstance(body, dict)
    body.update(cap)
    return body
