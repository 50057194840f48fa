"""The protocol POSTs bypass Starlette's middleware stack (`gateway/dispatch.ProtocolEntry`): what the stack did
for them must still happen — one request id per answer, the NUL refusal, errors in the route's shape, SSE
headers — and every other method on those paths still reaches FastAPI."""

from __future__ import annotations

from typing import Any

import httpx

from tests.integration.gateway.conftest import Gateway
from tests.support.fake_upstream import Reply

CHAT: dict[str, Any] = {"model": "fake/chat", "messages": [{"role": "user", "content": "Hi"}]}
MESSAGES: dict[str, Any] = {"model": "fake/chat", "max_tokens": 16, "messages": [{"role": "user", "content": "Hi"}]}


def _auth(gw: Gateway) -> dict[str, str]:
    return {"Authorization": f"Bearer {gw.key}"}


def _one_request_id(response: httpx.Response) -> str:
    ids = response.headers.get_list("x-request-id")
    assert len(ids) == 1, ids
    assert ids[0].startswith("req_") and len(ids[0]) == 28
    return ids[0]


def test_answers_success_error_and_refusal_carry_exactly_one_request_id(gw: Gateway) -> None:
    gw.upstream.push(Reply.text("hello"))
    ok = httpx.post(gw.server.text_url + "/v1/chat/completions", json=CHAT, headers=_auth(gw), timeout=30)
    assert ok.status_code == 200 and ok.headers["content-type"] == "application/json"
    assert int(ok.headers["content-length"]) == len(ok.content)
    assert ok.json()["choices"][0]["message"]["content"] == "hello"
    _one_request_id(ok)

    unknown = httpx.post(
        gw.server.text_url + "/v1/chat/completions", json={**CHAT, "model": "fake/none"}, headers=_auth(gw)
    )
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "model_not_found"
    _one_request_id(unknown)

    unauthenticated = httpx.post(gw.server.text_url + "/v1/chat/completions", json=CHAT)
    assert unauthenticated.status_code == 401
    _one_request_id(unauthenticated)


def test_nul_in_the_query_is_refused_in_the_routes_protocol_shape(gw: Gateway) -> None:
    r = httpx.post(gw.server.text_url + "/v1/messages?beta=%00", json=MESSAGES, headers=_auth(gw))
    assert r.status_code == 400
    body = r.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"  # Anthropic's shape
    assert "NUL" in body["error"]["message"]
    _one_request_id(r)


def test_stream_headers_and_request_id(gw: Gateway) -> None:
    gw.upstream.push(Reply.text("streamed words"))
    with httpx.stream(
        "POST", gw.server.text_url + "/v1/chat/completions", json={**CHAT, "stream": True}, headers=_auth(gw)
    ) as r:
        assert r.status_code == 200
        assert r.headers["content-type"] == "text/event-stream; charset=utf-8"
        assert r.headers["cache-control"] == "no-cache" and r.headers["x-accel-buffering"] == "no"
        assert "content-length" not in r.headers
        _one_request_id(r)
        body = r.read().decode()
    assert "streamed" in body
    assert body.rstrip().endswith("data: [DONE]")


def test_other_methods_on_protocol_paths_reach_the_router(gw: Gateway) -> None:
    r = httpx.get(gw.server.text_url + "/v1/chat/completions", headers=_auth(gw))
    assert r.status_code == 405
    _one_request_id(r)  # through the stack's request-id middleware
