"""Token log probabilities cross between Chat and Responses (issue 8): a Chat client of a Responses upstream
gets `choices[].logprobs.content`, a Responses client of a Chat upstream gets `output_text` logprobs, in
bodies and streams, with the upstream's values."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.integration.gateway.conftest import Gateway
from tests.support.fake_shapes import Answer
from tests.support.fake_upstream import Reply

ANSWER = Answer(text="Paris is the capital", logprobs=True)
EXPECTED = ANSWER.logprob_entries()


def _post(gw: Gateway, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(gw.server.text_url + path, json=body, headers={"Authorization": f"Bearer {gw.key}"}, timeout=30)


def _events(gw: Gateway, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with httpx.stream(
        "POST", gw.server.text_url + path, json=body, headers={"Authorization": f"Bearer {gw.key}"}, timeout=30
    ) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                out.append(json.loads(line[6:]))
    return out


CHAT = {"model": "fake/responses", "messages": [{"role": "user", "content": "Capital?"}], "logprobs": True}
RESPONSES = {"model": "fake/chat", "input": "Capital?", "include": ["message.output_text.logprobs"]}


def test_chat_client_of_a_responses_upstream_gets_the_logprobs(gw: Gateway) -> None:
    gw.upstream.push(Reply(answer=ANSWER))
    r = _post(gw, "/v1/chat/completions", {**CHAT, "top_logprobs": 2})
    assert r.status_code == 200, r.text
    sent = gw.upstream.last_request
    assert sent is not None and sent.path.endswith("/responses") and sent.json["top_logprobs"] == 2
    assert r.json()["choices"][0]["logprobs"] == {"content": EXPECTED, "refusal": None}


def test_chat_client_stream_of_a_responses_upstream_gets_the_logprobs(gw: Gateway) -> None:
    gw.upstream.push(Reply(answer=ANSWER))
    chunks = _events(gw, "/v1/chat/completions", {**CHAT, "stream": True})
    got = [e for c in chunks for ch in c["choices"] if ch.get("logprobs") for e in ch["logprobs"]["content"]]
    assert got == EXPECTED


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
def test_responses_client_of_a_chat_upstream_gets_the_logprobs(gw: Gateway, stream: bool) -> None:
    gw.upstream.push(Reply(answer=ANSWER))
    if not stream:
        r = _post(gw, "/v1/responses", RESPONSES)
        assert r.status_code == 200, r.text
        sent = gw.upstream.last_request
        assert sent is not None and sent.path.endswith("/chat/completions") and sent.json["logprobs"] is True
        assert r.json()["output"][0]["content"][0]["logprobs"] == EXPECTED
        return
    events = _events(gw, "/v1/responses", {**RESPONSES, "stream": True})
    deltas = [e for ev in events if ev["type"] == "response.output_text.delta" for e in ev["logprobs"]]
    assert deltas == EXPECTED
    (done,) = [ev for ev in events if ev["type"] == "response.output_text.done"]
    assert done["logprobs"] == EXPECTED
    (completed,) = [ev for ev in events if ev["type"] == "response.completed"]
    assert completed["response"]["output"][0]["content"][0]["logprobs"] == EXPECTED
