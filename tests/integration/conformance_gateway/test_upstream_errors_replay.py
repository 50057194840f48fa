"""Recorded real upstream errors, as the client sees them through the gateway.

A request the upstream refuses (HTTP 400) is the client's to fix: 400 `invalid_request_error` with the
upstream's message, in the gateway's error shape, plain JSON even when the client asked to stream, on the
fast path and translated alike. An upstream that does not know the deployment's model name (404 on Chat
and Messages, 400 `model_not_found` on Responses) is a misconfigured deployment, not a client mistake:
the client must not be told its valid model id is wrong, nor learn the internal upstream model name;
another deployment of the model should take the request. Nothing names the upstream URL or key.
"""

from __future__ import annotations

import copy
from typing import Any

import anthropic
import httpx
import openai
import pytest

from tests.integration.conformance_gateway.replay_gateway import (
    CLIENT_PATH,
    UPSTREAM_KEY,
    ReplayGateway,
    Slot,
)
from tests.support.cassettes import Interaction

CHAT_DEVELOPER_ROLE = Slot("chat-400-role", "openai_chat/test_openai_o1_mini_system_role[developer]")
CHAT_WEB_SEARCH = Slot("chat-400-web-search", "openai_chat/test_openai_web_search_tool_model_not_supported")
RESPONSES_STREAM_400 = Slot("responses-400-stream", "openai_responses/test_openai_responses_model_http_error")
RESPONSES_HISTORY = Slot(
    "responses-200-400-200", "openai_responses/test_openai_responses_thinking_with_modified_history"
)
MESSAGES_EFFORT = Slot(
    "messages-400-effort", "anthropic_messages/test_anthropic_explicit_effort_xhigh_unsupported_model_errors"
)
FAST_400 = [CHAT_DEVELOPER_ROLE, CHAT_WEB_SEARCH, RESPONSES_STREAM_400, MESSAGES_EFFORT]
# Requests whose recorded fault (temperature -1) the gateway's own validation already rejects.
GATEWAY_CATCHES = {RESPONSES_STREAM_400}

# The same recorded 400s reached from a client of another protocol.
CHAT_TO_MESSAGES_400 = Slot("x-chat-to-messages-400", MESSAGES_EFFORT.cassette)
MESSAGES_TO_CHAT_400 = Slot("x-messages-to-chat-400", CHAT_WEB_SEARCH.cassette)
RESPONSES_TO_MESSAGES_400 = Slot("x-responses-to-messages-400", MESSAGES_EFFORT.cassette)
CHAT_STREAM_TO_MESSAGES_400 = Slot("x-chat-stream-to-messages-400", MESSAGES_EFFORT.cassette)

# Upstream "no such model": the deployment names a model the upstream does not have.
NOT_FOUND = [
    Slot("chat-model-not-found", "openai_chat/test_model_name_suggestion[openai-chat]"),
    Slot("responses-model-not-found", "openai_responses/test_model_name_suggestion[openai-responses]"),
    Slot("messages-model-not-found", "anthropic_messages/test_model_name_suggestion[anthropic]"),
]
NOT_FOUND_WITH_FALLBACK = Slot(
    "chat-model-not-found-fallback",
    "openai_chat/test_model_name_suggestion[openai-chat]",
    fallback="openai_chat/test_openai_chat_prompt_cache_e2e",
)
SDK_400 = {
    "openai": Slot("sdk-openai-400", CHAT_DEVELOPER_ROLE.cassette),
    "anthropic": Slot("sdk-anthropic-400", MESSAGES_EFFORT.cassette),
}
SLOTS = [
    *FAST_400,
    RESPONSES_HISTORY,
    CHAT_TO_MESSAGES_400,
    MESSAGES_TO_CHAT_400,
    RESPONSES_TO_MESSAGES_400,
    CHAT_STREAM_TO_MESSAGES_400,
    *NOT_FOUND,
    NOT_FOUND_WITH_FALLBACK,
    *SDK_400.values(),
]


def recorded_body(it: Interaction, slot: Slot) -> dict[str, Any]:
    body = copy.deepcopy(it.request_json)
    assert isinstance(body, dict)
    body["model"] = slot.model_id
    return body


def upstream_error(it: Interaction) -> dict[str, Any]:
    error = it.response_json["error"]
    assert isinstance(error, dict)
    return error


def assert_gateway_error(response: httpx.Response, status: int, error_type: str, gw: ReplayGateway) -> dict[str, Any]:
    """The error shape of the client's protocol, plain JSON, nothing secret: OpenAI's `{error: {message, type,
    code, param}}` on Chat/Responses, Anthropic's envelope `{type: "error", error: {type, message}}` on Messages
    (with the interface's `error.type`, as on the other two; `code`/`param` ride inside `error`)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json"), response.headers["content-type"]
    body = response.json()
    error = body["error"]
    if response.request.url.path.startswith("/v1/messages"):
        assert set(body) == {"type", "error"} and body["type"] == "error", body
    else:
        assert set(body) == {"error"}, body
    assert error["type"] == error_type
    assert isinstance(error["message"], str) and error["message"]
    assert set(error) <= {"message", "type", "code", "param"}
    assert UPSTREAM_KEY not in response.text
    for replay in gw.replays.values():
        assert replay.base_url not in response.text
        assert f"127.0.0.1:{replay.base_url.rsplit(':', 1)[1]}" not in response.text
    result: dict[str, Any] = error
    return result


@pytest.mark.parametrize("slot", FAST_400, ids=lambda s: s.name)
def test_upstream_400_is_client_400_with_upstream_message(gw: ReplayGateway, slot: Slot) -> None:
    (it,) = gw.interactions(slot)
    assert it.status == 400
    # `stream: true` is sent as recorded: the failure must still come back as plain JSON.
    response = gw.post(CLIENT_PATH[slot.folder], recorded_body(it, slot))
    error = assert_gateway_error(response, 400, "invalid_request_error", gw)
    if upstream_error(it).get("param"):
        assert error.get("param") == upstream_error(it)["param"]
    if upstream_error(it).get("code") and slot not in GATEWAY_CATCHES:
        assert error.get("code") == upstream_error(it)["code"]  # e.g. unsupported_value: clients branch on it
    if slot in GATEWAY_CATCHES:
        # The gateway validates this field itself (its own wording) and spares the upstream call.
        assert not gw.replay(slot).requests
        return
    assert error["message"] == upstream_error(it)["message"]
    # Forwarded as sent: the gateway adds no output cap the client did not ask for (issue 20 rule 3).
    assert gw.replay(slot).requests[0].json == it.request_json
    gw.replay(slot).assert_all_served()


def test_error_between_two_successes_on_responses(gw: ReplayGateway) -> None:
    slot = RESPONSES_HISTORY
    statuses = []
    for it in gw.interactions(slot):
        response = gw.post("/v1/responses", recorded_body(it, slot))
        statuses.append(response.status_code)
        if it.status == 200:
            assert response.status_code == 200 and response.json() == {**it.response_json, "model": slot.model_id}
        else:
            error = assert_gateway_error(response, 400, "invalid_request_error", gw)
            assert error["message"] == upstream_error(it)["message"]
    assert statuses == [200, 400, 200]
    gw.replay(slot).assert_all_served()


def test_translated_upstream_400_chat_client_messages_upstream(gw: ReplayGateway) -> None:
    (it,) = gw.interactions(CHAT_TO_MESSAGES_400)
    body = {"model": CHAT_TO_MESSAGES_400.model_id, "messages": [{"role": "user", "content": "What is 2+2?"}]}
    error = assert_gateway_error(gw.post("/v1/chat/completions", body), 400, "invalid_request_error", gw)
    assert error["message"] == upstream_error(it)["message"]
    sent = gw.replay(CHAT_TO_MESSAGES_400).requests[0]
    assert sent.path == "/v1/messages" and sent.json["messages"][0]["role"] == "user"


def test_translated_upstream_400_on_a_stream_is_plain_json(gw: ReplayGateway) -> None:
    (it,) = gw.interactions(CHAT_STREAM_TO_MESSAGES_400)
    body = {
        "model": CHAT_STREAM_TO_MESSAGES_400.model_id,
        "messages": [{"role": "user", "content": "What is 2+2?"}],
        "stream": True,
    }
    with gw.stream("/v1/chat/completions", body) as response:
        response.read()
    error = assert_gateway_error(response, 400, "invalid_request_error", gw)
    assert error["message"] == upstream_error(it)["message"]
    assert gw.replay(CHAT_STREAM_TO_MESSAGES_400).requests[0].json["stream"] is True


def test_translated_upstream_400_messages_client_chat_upstream(gw: ReplayGateway) -> None:
    (it,) = gw.interactions(MESSAGES_TO_CHAT_400)
    body = {
        "model": MESSAGES_TO_CHAT_400.model_id,
        "max_tokens": 100,
        "system": "You are a helpful assistant.",
        "messages": [{"role": "user", "content": "What day is today?"}],
    }
    error = assert_gateway_error(gw.post("/v1/messages", body), 400, "invalid_request_error", gw)
    assert error["message"] == upstream_error(it)["message"]
    assert error["param"] == upstream_error(it)["param"] == "web_search_options"
    assert gw.replay(MESSAGES_TO_CHAT_400).requests[0].path == "/v1/chat/completions"


def test_translated_upstream_400_responses_client_messages_upstream(gw: ReplayGateway) -> None:
    (it,) = gw.interactions(RESPONSES_TO_MESSAGES_400)
    body = {"model": RESPONSES_TO_MESSAGES_400.model_id, "input": "What is 2+2?"}
    error = assert_gateway_error(gw.post("/v1/responses", body), 400, "invalid_request_error", gw)
    assert error["message"] == upstream_error(it)["message"]
    assert gw.replay(RESPONSES_TO_MESSAGES_400).requests[0].path == "/v1/messages"


def test_sdks_raise_bad_request_with_the_upstream_message(gw: ReplayGateway) -> None:
    (it,) = gw.interactions(SDK_400["openai"])
    with pytest.raises(openai.BadRequestError) as oerr:
        gw.openai.chat.completions.create(**recorded_body(it, SDK_400["openai"]))
    assert oerr.value.status_code == 400
    assert upstream_error(it)["message"] in str(oerr.value)
    assert oerr.value.param == "messages[0].role"
    (it,) = gw.interactions(SDK_400["anthropic"])
    with pytest.raises(anthropic.BadRequestError) as aerr:
        gw.anthropic.messages.create(**recorded_body(it, SDK_400["anthropic"]))
    assert aerr.value.status_code == 400
    assert upstream_error(it)["message"] in str(aerr.value)
    assert isinstance(aerr.value.body, dict) and aerr.value.body["type"] == "error"
    # Gateway errors on /v1/messages (here: no key) raise the SDK's matching class too: the SDK picks it from
    # the HTTP status, while `error.type` is the interface's (issue 20 rule 1).
    with pytest.raises(anthropic.AuthenticationError) as auth:
        anthropic.Anthropic(base_url=gw.server.text_url, api_key="sk-wrong", max_retries=0).messages.create(
            **recorded_body(it, SDK_400["anthropic"])
        )
    assert isinstance(auth.value.body, dict) and auth.value.body["error"]["type"] == "invalid_request_error"


# ---------------------------------------------------------------- upstream does not know the model


def _upstream_model(it: Interaction) -> str:
    model = it.request_json["model"]
    assert isinstance(model, str)
    return model


@pytest.mark.parametrize("slot", NOT_FOUND, ids=lambda s: s.name)
def test_upstream_model_not_found_is_a_deployment_fault(gw: ReplayGateway, slot: Slot) -> None:
    (it,) = gw.interactions(slot)
    response = gw.post(CLIENT_PATH[slot.folder], recorded_body(it, slot))
    assert gw.replay(slot).requests, "the upstream was never called"
    # Not the client's fault: its model id is in the catalog (and /v1/models lists it). A 400/404 would
    # tell the client to fix a request that is fine; the operator must fix the deployment instead.
    error = assert_gateway_error(response, 502, "api_error", gw)
    # The deployment's upstream model name is internal configuration.
    assert _upstream_model(it) not in response.text
    listed = [m["id"] for m in httpx.get(gw.server.text_url + "/v1/models", headers=gw.auth_headers()).json()["data"]]
    assert slot.model_id in listed
    assert error["message"]


def test_upstream_model_not_found_falls_back_to_the_next_deployment(gw: ReplayGateway) -> None:
    slot = NOT_FOUND_WITH_FALLBACK
    bad, good = gw.replay(slot), gw.fallback_replay(slot)
    answers = iter(good.interactions)
    body = {"model": slot.model_id, "messages": [{"role": "user", "content": "hello"}]}
    # Deployments are tried from a rotating start: within two requests one starts at the broken one.
    for _ in range(2):
        response = gw.post("/v1/chat/completions", body)
        assert response.status_code == 200, response.text
        assert response.json() == {**next(answers).response_json, "model": slot.model_id}
        if bad.requests:
            break
    assert len(bad.requests) == 1, "the broken deployment was never tried"


def test_gateway_validation_errors_take_the_protocol_shape(gw: ReplayGateway) -> None:
    """Errors the gateway finds itself (validation, unknown model) on /v1/messages are Anthropic-shaped;
    Chat keeps OpenAI's, `param` naming the field either way."""
    slot = MESSAGES_TO_CHAT_400
    no_cap = {"model": slot.model_id, "messages": [{"role": "user", "content": "hi"}]}
    error = assert_gateway_error(gw.post("/v1/messages", no_cap), 400, "invalid_request_error", gw)
    assert error["param"] == "max_tokens"
    counted = gw.post("/v1/messages/count_tokens", {"model": slot.model_id, "messages": "nope"})
    assert assert_gateway_error(counted, 400, "invalid_request_error", gw)["param"] == "messages"
    unknown = gw.post("/v1/messages", {**no_cap, "model": "nobody/none", "max_tokens": 5})
    assert assert_gateway_error(unknown, 404, "invalid_request_error", gw)["message"]
    chat = gw.post("/v1/chat/completions", {"model": slot.model_id, "messages": []})
    assert assert_gateway_error(chat, 400, "invalid_request_error", gw)["param"] == "messages"
