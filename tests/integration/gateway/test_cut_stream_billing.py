"""Abandoned streams from an Anthropic upstream are billed what was relayed, not the placeholder usage of
`message_start` (1 output token), for every client protocol: the fast path (Messages) and the translated
ones (Chat, Responses). Issue 9 item 6."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.integration.gateway.conftest import Gateway
from tests.integration.gateway.test_gateway_behaviour import _wait_logs
from tests.support.fake_upstream import Reply, Usage

WORDS = " ".join(f"word{i}" for i in range(60))
REQUESTS: dict[str, tuple[str, dict[str, Any]]] = {
    "messages": (
        "/v1/messages",
        {"model": "fake/claude", "max_tokens": 200, "messages": [{"role": "user", "content": "Hi"}]},
    ),
    "chat": ("/v1/chat/completions", {"model": "fake/claude", "messages": [{"role": "user", "content": "Hi"}]}),
    "responses": ("/v1/responses", {"model": "fake/claude", "input": "Hi"}),
}


@pytest.mark.parametrize("client", sorted(REQUESTS))
def test_abandoned_anthropic_stream_is_billed_what_was_relayed(gw: Gateway, client: str) -> None:
    key = gw.new_team(f"cut-{client}", usd="1")
    gw.upstream.push(
        Reply.text(WORDS, usage=Usage(input_tokens=12, output_tokens=60), chunk_delay=0.1), path="/v1/messages"
    )
    path, body = REQUESTS[client]
    with httpx.stream(
        "POST",
        gw.server.text_url + path,
        json={**body, "stream": True},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    ) as r:
        assert r.status_code == 200
        text_events = 0
        for line in r.iter_lines():
            if line.startswith("data: ") and "word" in line:
                text_events += 1
            if text_events >= 12:
                break  # hang up mid-stream, long after message_start's placeholder usage
    rows = _wait_logs(gw, key, 1)
    assert len(rows) == 1 and rows[0]["status"] == "cancelled"
    produced = int(str(rows[0]["completion_tokens"]))
    assert 10 <= produced < 60, produced  # what was relayed (12 words or more), not 1, not the whole answer
