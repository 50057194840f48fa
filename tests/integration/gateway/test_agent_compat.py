"""What coding agents need from the gateway beyond the three POST routes: the model they asked for named in
every answer, Claude Code's mid-conversation system turns, session headers, token counting, model lookup."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import httpx
import pytest

from tests.integration.gateway.conftest import Gateway
from tests.integration.gateway.test_gateway_behaviour import post
from tests.support.fake_upstream import Reply, ToolCall

PATHS = {"fake/chat": "/v1/chat/completions", "fake/responses": "/v1/responses", "fake/claude": "/v1/messages"}


def request_body(model: str, stream: bool) -> dict[str, Any]:
    if model == "fake/responses":
        return {"model": model, "input": "Hi", "stream": stream}
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": "Hi"}], "stream": stream}
    if model == "fake/claude":
        body["max_tokens"] = 50
    return body


def sse_payloads(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[6:]))
    return out


def named_models(event: dict[str, Any]) -> list[str]:
    """`model` of a Chat chunk, of a Responses `response` object, of a Messages `message_start`."""
    found = [event["model"]] if "model" in event else []
    for key in ("response", "message"):
        if isinstance(event.get(key), dict) and "model" in event[key]:
            found.append(event[key]["model"])
    return found


@pytest.mark.parametrize("model", list(PATHS))
def test_same_protocol_answers_name_the_model_asked_for(gw: Gateway, model: str) -> None:
    gw.upstream.push(Reply.tool_call("pick", {"model": "keep-me"}, text="Using a tool."))
    r = post(gw, PATHS[model], request_body(model, stream=False))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["model"] == model  # the upstream answered "up-<kind>"
    assert "keep-me" in r.text  # a nested "model" (here a tool argument) is the model's output: untouched

    gw.upstream.push(Reply.text("Hello there, dear friend."))
    r = post(gw, PATHS[model], request_body(model, stream=True))
    assert r.status_code == 200, r.text
    names = [name for event in sse_payloads(r.text) for name in named_models(event)]
    assert names and set(names) == {model}, names
    if model == "fake/chat":
        assert len(names) >= 5  # every chunk names it


def test_fast_path_relays_the_upstream_bytes_but_for_the_model(gw: Gateway) -> None:
    gw.upstream.push(Reply.tool_calls([ToolCall("get_weather", {"city": "Paris"}, "call_1")], text="Let me see."))
    r = post(gw, "/v1/messages", {**request_body("fake/claude", stream=True), "tools": []})
    gw.upstream.push(Reply.tool_calls([ToolCall("get_weather", {"city": "Paris"}, "call_1")], text="Let me see."))
    direct = httpx.post(
        gw.upstream.base_url + "/v1/messages",
        json={**request_body("fake/claude", stream=True), "model": "up-anthropic"},
        timeout=10,
    )
    # The two answers differ only in the fake's message id (a counter) and, through us, the model.
    ours = re.sub(r"msg_fake\d+", "msg_X", r.text)
    theirs = re.sub(r"msg_fake\d+", "msg_X", direct.text)
    assert '"model":"up-anthropic"' in theirs
    assert ours == theirs.replace('"model":"up-anthropic"', '"model":"fake/claude"')


@pytest.mark.local_model
def test_embedded_model_answers_name_its_catalog_id(gw: Gateway) -> None:
    body = {"model": "local/smollm2-135m-instruct", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3}
    r = post(gw, "/v1/chat/completions", body)
    assert r.status_code == 200, r.text
    assert r.json()["model"] == "local/smollm2-135m-instruct"
    r = post(gw, "/v1/chat/completions", {**body, "stream": True})
    names = {e.get("model") for e in sse_payloads(r.text)}
    assert names == {"local/smollm2-135m-instruct"}


@pytest.mark.parametrize("header", ["session-id", "x-claude-code-session-id", "X-Svc-Session-Id"])
def test_a_tool_session_stays_on_one_deployment(gw: Gateway, header: str) -> None:
    body = {"model": "fake/fallback", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5}
    for session in ("01a2089b-d05b-7d11-8969-07dcdcda239e", "5f0c1c52-3d55-4f57-9d8f-2b0c6d0e2a11"):
        gw.upstream.reset()
        for _ in range(4):
            r = post(gw, "/v1/chat/completions", body, headers={header: session})
            assert r.status_code == 200, r.text
        # fake/fallback has an openai_chat and an anthropic deployment: one session, one of them.
        assert len({req.path for req in gw.upstream.requests}) == 1, gw.upstream.calls


# ---------------------------------------------------------------- endpoints the clients call besides the three


@pytest.mark.parametrize("host", ["text", "media"])
def test_head_and_get_root_answer_200_without_a_key(gw: Gateway, host: str) -> None:
    url = gw.server.text_url if host == "text" else gw.server.media_url
    head = httpx.head(url + "/")
    assert head.status_code == 200 and head.content == b""
    assert httpx.get(url + "/").json()["status"] == "ok"


def test_model_lookup_by_id_with_a_slash(gw: Gateway) -> None:
    auth = {"Authorization": f"Bearer {gw.key}"}
    r = httpx.get(gw.server.text_url + "/v1/models/fake/claude", headers=auth)
    assert r.status_code == 200, r.text
    entry = r.json()
    assert entry["id"] == "fake/claude" and entry["object"] == "model" and entry["type"] == "model"
    assert (entry["context_window"], entry["max_output_tokens"]) == (200000, 32000)
    assert (entry["max_input_tokens"], entry["max_tokens"]) == (200000, 32000)
    listed = {m["id"]: m for m in httpx.get(gw.server.text_url + "/v1/models", headers=auth).json()["data"]}
    assert listed["fake/claude"] == entry
    assert listed["local/smollm2-135m-instruct"]["context_window"] is None  # the catalog does not say
    # Both SDKs (Anthropic's sends the slash percent-encoded).
    assert gw.openai.models.retrieve("fake/chat").id == "fake/chat"
    model = gw.anthropic.models.retrieve("fake/responses")
    assert model.id == "fake/responses" and model.max_input_tokens == 200000 and model.max_tokens == 32000


@pytest.mark.parametrize("model_id", ["fake/nope", "gpt-4o", "fake/claude/extra"])
def test_unknown_model_lookup_is_404_model_not_found(gw: Gateway, model_id: str) -> None:
    r = httpx.get(gw.server.text_url + "/v1/models/" + model_id, headers={"Authorization": f"Bearer {gw.key}"})
    assert r.status_code == 404
    error = r.json()["error"]
    assert (error["type"], error["code"], error["param"]) == ("invalid_request_error", "model_not_found", "model")


COUNT_BODY: dict[str, Any] = {
    "system": "You are terse.",
    "messages": [{"role": "user", "content": "Count me: " + "word " * 50}],
    "tools": [{"name": "pick", "description": "Pick one", "input_schema": {"type": "object"}}],
}


def test_count_tokens_is_exact_from_an_anthropic_upstream(gw: Gateway) -> None:
    r = post(gw, "/v1/messages/count_tokens", {**COUNT_BODY, "model": "fake/claude"})
    assert r.status_code == 200, r.text
    sent = gw.upstream.last_request
    assert sent is not None and sent.path == "/v1/messages/count_tokens"
    assert sent.json == {**COUNT_BODY, "model": "up-anthropic"}
    assert sent.headers["x-api-key"] == "sk-upstream-secret" and sent.headers["anthropic-version"]
    assert r.json() == {"input_tokens": 3 + len(json.dumps(COUNT_BODY["messages"])) // 3}
    # The SDK's count_tokens, with max_tokens absent as it sends it.
    counted = gw.anthropic.messages.count_tokens(model="fake/claude", messages=COUNT_BODY["messages"])
    assert counted.input_tokens == r.json()["input_tokens"]


def _team_money(gw: Gateway, key: str) -> Decimal:
    """Available plus frozen: unchanged by a reservation being returned, changed by any charge."""
    data = gw.balance(key)
    return Decimal(str(data["available_balance"])) + Decimal(str(data["frozen_balance"]))


def test_count_tokens_estimates_for_other_upstreams_and_is_not_billed(gw: Gateway) -> None:
    # A team of its own: the module's shared key may still be settling a request an earlier test made
    # (settlement runs after the answer's last byte), which would move its balance during this test.
    key = gw.new_team("count-tokens-not-billed")
    before = _team_money(gw, key)
    small = post(gw, "/v1/messages/count_tokens", {**COUNT_BODY, "model": "fake/chat"}, key=key).json()
    bigger = {**COUNT_BODY, "messages": [{"role": "user", "content": "word " * 400}]}
    large = post(gw, "/v1/messages/count_tokens", {**bigger, "model": "fake/responses"}, key=key).json()
    assert small["estimated"] is True and large["estimated"] is True
    assert 0 < small["input_tokens"] < large["input_tokens"]
    assert gw.upstream.requests == []  # nothing was sent upstream
    assert _team_money(gw, key) == before


@pytest.mark.local_model
def test_count_tokens_is_exact_for_the_local_model(gw: Gateway) -> None:
    local = "local/smollm2-135m-instruct"
    body = {
        "model": local,
        "system": "You are terse.",
        "messages": [
            {"role": "user", "content": "Name three rivers in Europe, please."},
            {"role": "assistant", "content": "Danube, Rhine, Seine."},
            {"role": "user", "content": "And two in Asia?"},
        ],
    }
    counted = post(gw, "/v1/messages/count_tokens", body).json()
    assert "estimated" not in counted, counted
    # The same request, run: the model reports the prompt tokens it really read.
    ran = post(gw, "/v1/messages", {**body, "max_tokens": 1})
    assert ran.status_code == 200, ran.text
    assert counted["input_tokens"] == ran.json()["usage"]["input_tokens"]
    # A prompt longer than the model's context window is still counted, not refused.
    long = {"model": local, "messages": [{"role": "user", "content": "river " * 3000}]}
    too_long = post(gw, "/v1/messages/count_tokens", long).json()
    assert "estimated" not in too_long and too_long["input_tokens"] > 3000, too_long


def test_count_tokens_validates_and_resolves_the_model(gw: Gateway) -> None:
    r = post(gw, "/v1/messages/count_tokens", {**COUNT_BODY, "model": "fake/nope"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
    r = post(gw, "/v1/messages/count_tokens", {"model": "fake/claude", "messages": "not a list"})
    assert r.status_code == 400 and r.json()["error"]["param"] == "messages"


def test_count_tokens_and_model_lookup_use_the_query_rate_limit(gw: Gateway) -> None:
    key = gw.new_team("count-team", usd="1")
    assert gw.admin("PUT", "/teams/count-team/tier", json={"tier": "tiny"}).status_code == 200
    first = post(gw, "/v1/messages/count_tokens", {**COUNT_BODY, "model": "fake/chat"}, key=key)
    assert first.status_code == 200 and first.headers["x-ratelimit-limit"] == "2"
    second = httpx.get(gw.server.text_url + "/v1/models/fake/chat", headers={"Authorization": f"Bearer {key}"})
    assert second.status_code == 200
    third = post(gw, "/v1/messages/count_tokens", {**COUNT_BODY, "model": "fake/chat"}, key=key)
    # /v1/messages routes answer in Anthropic's envelope with the interface's error.type (docs/api/errors.md).
    assert third.status_code == 429 and third.json()["type"] == "error"
    assert third.json()["error"]["type"] == "rate_limit_exceeded"
    assert (
        post(
            gw, "/v1/chat/completions", {"model": "fake/chat", "messages": [{"role": "user", "content": "x"}]}, key=key
        ).status_code
        == 200
    )


# ---------------------------------------------------------------- Claude Code's Messages requests

CLAUDE_CODE_REQUEST: dict[str, Any] = {
    "max_tokens": 32000,
    "system": [
        {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1"},
        {"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}},
    ],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "write a file", "cache_control": {"type": "ephemeral"}}]},
        {"role": "system", "content": "Available agent types: claude, Explore."},
    ],
    "tools": [{"name": "Write", "description": "Write a file", "input_schema": {"type": "object"}}],
    "metadata": {"user_id": '{"device_id":"d","session_id":"s"}'},
    "thinking": {"type": "adaptive"},
    "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
    "output_config": {"effort": "high"},
    "stream": True,
}
BETA = {"anthropic-beta": "claude-code-20250219,mid-conversation-system-2026-04-07", "anthropic-version": "2023-06-01"}


def test_claude_code_request_reaches_a_messages_upstream_untouched(gw: Gateway) -> None:
    r = post(gw, "/v1/messages?beta=true", {**CLAUDE_CODE_REQUEST, "model": "fake/claude"}, headers=BETA)
    assert r.status_code == 200, r.text
    sent = gw.upstream.last_request
    assert sent is not None
    assert sent.json == {**CLAUDE_CODE_REQUEST, "model": "up-anthropic"}
    assert sent.headers["anthropic-beta"] == BETA["anthropic-beta"]


@pytest.mark.parametrize("path", ["/v1/messages?beta=true", "/v1/messages/count_tokens?beta=true"])
def test_system_turns_without_the_beta_are_a_400_naming_the_role(gw: Gateway, path: str) -> None:
    """The interface allows roles `user` and `assistant` only; a `system` turn needs the mid-conversation-system
    beta in `anthropic-beta` (issue 20 rule 2). The refusal is worded so Claude Code resends without them."""
    headers = {"anthropic-beta": "claude-code-20250219,oauth-2025-04-20", "anthropic-version": "2023-06-01"}
    gw.upstream.reset()
    r = post(gw, path, {**CLAUDE_CODE_REQUEST, "model": "fake/claude"}, headers=headers)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert r.json()["type"] == "error"
    assert (error["type"], error["param"]) == ("invalid_request_error", "messages[1].role")
    assert re.search(r"Input should be 'user' or 'assistant'", error["message"]), error
    assert gw.upstream.last_request is None


def test_system_turns_under_the_clear_at_beta_spelling_are_accepted(gw: Gateway) -> None:
    headers = {"anthropic-beta": "mid-conversation-system-clear-at-2026-08-21", "anthropic-version": "2023-06-01"}
    r = post(gw, "/v1/messages?beta=true", {**CLAUDE_CODE_REQUEST, "model": "fake/claude"}, headers=headers)
    assert r.status_code == 200, r.text
    sent = gw.upstream.last_request
    assert sent is not None and sent.json["messages"][1]["role"] == "system"


@pytest.mark.parametrize("model", ["fake/chat", "fake/responses"])
def test_claude_code_system_turn_becomes_the_upstreams_own(gw: Gateway, model: str) -> None:
    r = post(gw, "/v1/messages?beta=true", {**CLAUDE_CODE_REQUEST, "model": model}, headers=BETA)
    assert r.status_code == 200, r.text
    sent = gw.upstream.last_request
    assert sent is not None
    turns = sent.json["messages"] if model == "fake/chat" else sent.json["input"]
    late = turns[-1]  # after the user's turn, where Claude Code put it
    assert late["role"] == ("system" if model == "fake/chat" else "developer")
    text = late["content"] if isinstance(late["content"], str) else late["content"][0]["text"]
    assert text == "Available agent types: claude, Explore."
    for field in ("context_management", "output_config", "thinking", "metadata"):
        assert field not in sent.json, field  # not the upstream protocol's fields
