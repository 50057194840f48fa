"""Errors as the interface states them (issue 20): the interface's `error.type` in Anthropic's envelope on
`/v1/messages` (rule 1), one error line and the upstream's message in the log when a fast-path upstream fails
mid-stream (rule 5), Anthropic's own error types in error events of translated Messages streams (rule 6)."""

from __future__ import annotations

import json
import time
from typing import Any

import anthropic
import httpx
import pytest

from tests.integration.gateway.conftest import Gateway
from tests.integration.gateway.test_gateway_behaviour import post
from tests.support.fake_upstream import Reply

MESSAGES: dict[str, Any] = {"model": "fake/claude", "max_tokens": 50, "messages": [{"role": "user", "content": "Hi"}]}
UPSTREAM_MESSAGE = "the model crashed while generating (upstream detail 42)"


def assert_anthropic_envelope(r: httpx.Response, status: int, error_type: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert body["type"] == "error" and set(body) == {"type", "error"}, body
    error: dict[str, Any] = body["error"]
    assert error["type"] == error_type, error
    assert isinstance(error["message"], str) and error["message"]
    return error


def test_messages_errors_carry_the_interfaces_types(gw: Gateway) -> None:
    bad_key = httpx.post(
        gw.server.text_url + "/v1/messages", json=MESSAGES, headers={"x-api-key": "sk-not-a-key"}, timeout=30
    )
    assert_anthropic_envelope(bad_key, 401, "invalid_request_error")
    missing = post(gw, "/v1/messages", {k: v for k, v in MESSAGES.items() if k != "max_tokens"})
    assert assert_anthropic_envelope(missing, 400, "invalid_request_error")["param"] == "max_tokens"
    unknown = post(gw, "/v1/messages", {**MESSAGES, "model": "fake/nope"})
    assert assert_anthropic_envelope(unknown, 404, "invalid_request_error")["code"] == "model_not_found"
    count = post(gw, "/v1/messages/count_tokens", {"model": "fake/nope", "messages": MESSAGES["messages"]})
    assert_anthropic_envelope(count, 404, "invalid_request_error")
    broke = gw.new_team("messages-broke", usd=None)
    assert_anthropic_envelope(post(gw, "/v1/messages", MESSAGES, key=broke), 402, "insufficient_quota")
    gw.upstream.push(Reply.error(500, "upstream exploded"), path="/v1/messages")
    assert_anthropic_envelope(post(gw, "/v1/messages", MESSAGES), 502, "api_error")
    limited = gw.new_team("messages-limited", usd="1")
    assert gw.admin("PUT", "/teams/messages-limited/tier", json={"tier": "tiny"}).status_code == 200
    answers = [post(gw, "/v1/messages", MESSAGES, key=limited) for _ in range(4)]
    assert [a.status_code for a in answers[:3]] == [200, 200, 200]
    assert_anthropic_envelope(answers[3], 429, "rate_limit_exceeded")


def test_the_anthropic_sdk_still_raises_by_http_status(gw: Gateway) -> None:
    def create(client: anthropic.Anthropic, **over: Any) -> None:
        client.messages.create(**{**MESSAGES, **over})

    wrong = anthropic.Anthropic(base_url=gw.server.text_url, api_key="sk-not-a-key", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as auth:
        create(wrong)
    with pytest.raises(anthropic.NotFoundError) as missing:
        create(gw.anthropic, model="fake/nope")
    with pytest.raises(anthropic.BadRequestError) as bad:
        create(gw.anthropic, max_tokens=0)
    broke = anthropic.Anthropic(base_url=gw.server.text_url, api_key=gw.new_team("sdk-broke", usd=None), max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as poor:
        create(broke)
    gw.upstream.push(Reply.error(500, "upstream exploded"), path="/v1/messages")
    with pytest.raises(anthropic.InternalServerError) as upstream:
        create(gw.anthropic)
    seen = [(e.value.status_code, e.value.body) for e in (auth, missing, bad, poor, upstream)]
    assert [status for status, _ in seen] == [401, 404, 400, 402, 502]
    types = [body["error"]["type"] for _, body in seen if isinstance(body, dict)]
    assert types == ["invalid_request_error"] * 3 + ["insufficient_quota", "api_error"]


# ---------------------------------------------------------------- mid-stream upstream failures

STREAM_BODIES: dict[str, tuple[str, dict[str, Any]]] = {
    "fake/chat": ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}]}),
    "fake/responses": ("/v1/responses", {"input": "Hi"}),
    "fake/claude": ("/v1/messages", {"max_tokens": 50, "messages": [{"role": "user", "content": "Hi"}]}),
}


def _stream(gw: Gateway, key: str, path: str, body: dict[str, Any]) -> httpx.Response:
    r = httpx.post(
        gw.server.text_url + path, json={**body, "stream": True}, headers={"Authorization": f"Bearer {key}"}, timeout=30
    )
    assert r.status_code == 200, r.text
    return r


def _error_payloads(text: str) -> list[dict[str, Any]]:
    """Every SSE data payload that reports an error: Chat's `{"error": ...}` line, Responses' `error` and
    `response.failed` events, Messages' `error` event."""
    out = []
    for line in text.splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        payload = json.loads(line[6:])
        kind = payload.get("type")
        if kind in ("error", "response.failed") or (kind is None and isinstance(payload.get("error"), dict)):
            out.append(payload)
    return out


def _log_row(gw: Gateway, key: str, request_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 15
    while True:
        now = int(time.time())
        r = httpx.get(
            gw.server.text_url + "/v1/logs",
            params={"start_time": now - 3600, "end_time": now + 60, "page_size": 100},
            headers={"Authorization": f"Bearer {key}"},
        )
        assert r.status_code == 200, r.text
        rows = {row["task_id"]: row for row in r.json()["requests"]}
        if request_id in rows or time.monotonic() > deadline:
            row: dict[str, Any] = rows[request_id]
            return row
        time.sleep(0.1)


@pytest.mark.parametrize("model", sorted(STREAM_BODIES))
def test_fast_path_mid_stream_failure_is_one_error_and_the_upstreams_message_is_logged(gw: Gateway, model: str) -> None:
    key = gw.new_team(f"midstream-{model.split('/')[1]}", usd="1")
    path, body = STREAM_BODIES[model]
    # After content on every protocol (Responses sends 4 events first): an error before it is retried instead.
    gw.upstream.push(Reply.text("one two three four five six", error_after=6, error_message=UPSTREAM_MESSAGE))
    r = _stream(gw, key, path, {**body, "model": model})
    assert "ended unexpectedly" not in r.text
    assert "[DONE]" not in r.text
    errors = _error_payloads(r.text)
    assert len(errors) == 1, r.text
    assert UPSTREAM_MESSAGE in json.dumps(errors[0])
    row = _log_row(gw, key, r.headers["x-request-id"])
    assert row["status"] == "error" and row["error"] == UPSTREAM_MESSAGE, row


@pytest.mark.parametrize("model", ["fake/chat", "fake/responses"])
def test_translated_messages_stream_errors_use_anthropics_types(gw: Gateway, model: str) -> None:
    gw.upstream.push(Reply.text("one two three four five six", error_after=6, error_message=UPSTREAM_MESSAGE))
    r = _stream(gw, gw.key, "/v1/messages", {**STREAM_BODIES["fake/claude"][1], "model": model})
    errors = [p for p in _error_payloads(r.text) if p.get("type") == "error"]
    assert len(errors) == 1, r.text
    assert errors[0]["error"] == {"type": "api_error", "message": UPSTREAM_MESSAGE}
    assert "event: error" in r.text and "server_error" not in r.text


def test_translated_messages_stream_rate_limit_event_is_rate_limit_error(gw: Gateway) -> None:
    gw.upstream.push(
        Reply.text("one two three four", error_after=2, error_message="slow down", error_type="rate_limit_exceeded")
    )
    r = _stream(gw, gw.key, "/v1/messages", {**STREAM_BODIES["fake/claude"][1], "model": "fake/chat"})
    errors = [p for p in _error_payloads(r.text) if p.get("type") == "error"]
    assert errors == [{"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}], r.text
