"""Same-protocol fast path against recorded real traffic: the client gets what the real API sent.

Each cassette's recorded request bodies go through the gateway (only `model` changed to our model id)
to a replay of the recorded answers. Non-streamed bodies must come back JSON-equal, streams event by
event (same `event:` names, JSON-equal data), but for `model`, which names the id the client asked for
(`as_named`); the replay must receive exactly the recorded request (the deployment's upstream model is
the recorded one, so even `model` matches).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.integration.conformance_gateway.replay_gateway import (
    CLIENT_PATH,
    UPSTREAM_KEY,
    ReplayGateway,
    Slot,
)
from tests.integration.conformance_gateway.sse_wire import WireEvent, parse_sse, read_stream
from tests.support.cassettes import Interaction

CHAT = [
    Slot("chat-valid", "openai_chat/test_valid_response"),
    Slot("chat-stream-usage", "openai_chat/test_dbos_model_stream_direct"),
    Slot("chat-stream-tool", "openai_chat/test_run_stream_sync_streams_real_model"),
    Slot("chat-parallel-tools", "openai_chat/test_complex_agent_run"),
    Slot("chat-prompt-cache", "openai_chat/test_openai_chat_prompt_cache_e2e"),
]
RESPONSES = [
    Slot("responses-simple", "openai_responses/test_openai_responses_model_simple_response"),
    Slot("responses-stream", "openai_responses/test_openai_responses_stream"),
    Slot("responses-stream-usage", "openai_responses/test_openai_responses_streaming_usage"),
    Slot("responses-thinking", "openai_responses/test_openai_responses_thinking_part_iter"),
    Slot("responses-web-search", "openai_responses/test_openai_responses_model_web_search_tool_stream"),
]
MESSAGES = [
    Slot("messages-instructions", "anthropic_messages/test_anthropic_model_instructions"),
    Slot("messages-stream", "anthropic_messages/test_request_stream_fallback_for_high_max_tokens"),
    Slot("messages-thinking-stream", "anthropic_messages/test_anthropic_model_thinking_part_stream"),
    Slot("messages-tool-search-stream", "anthropic_messages/test_anthropic_native_tool_search_streaming"),
    Slot("messages-parallel-tools", "anthropic_messages/test_multiple_parallel_tool_calls"),
    Slot("messages-cache", "anthropic_messages/test_anthropic_cache_real_api"),
    Slot("messages-stop-sequence", "anthropic_messages/test_stop_settings[anthropic]"),
]
# Second copies for the variants below (a replay serves each recorded answer once).
CHAT_NO_USAGE = Slot("chat-stream-no-usage", "openai_chat/test_dbos_model_stream_direct")
CHAT_TOOL_NO_USAGE = Slot("chat-stream-tool-no-usage", "openai_chat/test_run_stream_sync_streams_real_model")
SDK_SLOTS = {
    "chat-json": Slot("sdk-chat-json", "openai_chat/test_valid_response"),
    "chat-sse": Slot("sdk-chat-sse", "openai_chat/test_run_stream_sync_streams_real_model"),
    "responses-json": Slot("sdk-responses-json", "openai_responses/test_openai_responses_model_simple_response"),
    "responses-sse": Slot("sdk-responses-sse", "openai_responses/test_openai_responses_streaming_usage"),
    "messages-json": Slot("sdk-messages-json", "anthropic_messages/test_multiple_parallel_tool_calls"),
    "messages-sse": Slot("sdk-messages-sse", "anthropic_messages/test_anthropic_model_thinking_part_stream"),
}
SLOTS = [*CHAT, *RESPONSES, *MESSAGES, CHAT_NO_USAGE, CHAT_TOOL_NO_USAGE, *SDK_SLOTS.values()]


def client_body(it: Interaction, slot: Slot) -> dict[str, Any]:
    body = copy.deepcopy(it.request_json)
    assert isinstance(body, dict)
    body["model"] = slot.model_id
    return body


def client_path(it: Interaction, slot: Slot) -> str:
    # Messages cassettes were recorded through the SDK's beta client: keep its `?beta=true`.
    query = "?beta=true" if "?beta=true" in it.uri else ""
    return CLIENT_PATH[slot.folder] + query


def as_named(payload: Any, model: str) -> Any:
    """A recorded answer as the client gets it: the `model` of the body or chunk, of a Responses `response`
    and of a Messages `message` is the id the client asked for; nothing else changes."""
    if not isinstance(payload, dict):
        return payload
    out = copy.deepcopy(payload)
    if "model" in out:
        out["model"] = model
    for key in ("response", "message"):
        if isinstance(out.get(key), dict) and "model" in out[key]:
            out[key]["model"] = model
    return out


def comparable(events: list[WireEvent], model: str | None = None) -> list[tuple[str | None, Any]]:
    """(event, data) pairs; with `model`, as the client gets them (`as_named`)."""
    return [(e.event, e.payload if model is None else as_named(e.payload, model)) for e in events]


def is_usage_chunk(event: WireEvent) -> bool:
    payload = event.payload
    return isinstance(payload, dict) and payload.get("choices") == [] and payload.get("usage") is not None


def assert_no_secret(text: str, gw: ReplayGateway) -> None:
    assert UPSTREAM_KEY not in text
    for replay in gw.replays.values():
        assert replay.base_url not in text


@pytest.mark.parametrize("slot", [*CHAT, *RESPONSES, *MESSAGES], ids=lambda s: s.name)
def test_recorded_exchange_is_relayed_unchanged(gw: ReplayGateway, slot: Slot) -> None:
    replay = gw.replay(slot)
    for n, it in enumerate(gw.interactions(slot)):
        body = client_body(it, slot)
        if body.get("stream"):
            with gw.stream(client_path(it, slot), body) as response:
                got = read_stream(response)
            assert comparable(got) == comparable(parse_sse(it.sse_body), slot.model_id), f"{it.id}: stream differs"
        else:
            response = gw.post(client_path(it, slot), body)
            assert response.status_code == it.status == 200, response.text
            assert response.headers["content-type"].startswith("application/json")
            assert response.json() == as_named(it.response_json, slot.model_id), f"{it.id}: body differs"
            assert_no_secret(response.text, gw)
        sent = replay.requests[n]
        assert sent.json == it.request_json, f"{it.id}: upstream got a different body"
        if slot.upstream_kind == "anthropic":
            assert sent.headers.get("x-api-key") == UPSTREAM_KEY
            assert sent.headers.get("anthropic-version")
        else:
            assert sent.headers.get("authorization") == f"Bearer {UPSTREAM_KEY}"
    replay.assert_all_served()


@pytest.mark.parametrize("slot", [CHAT_NO_USAGE, CHAT_TOOL_NO_USAGE], ids=lambda s: s.name)
def test_chat_stream_hides_the_usage_chunk_the_client_did_not_ask_for(gw: ReplayGateway, slot: Slot) -> None:
    replay = gw.replay(slot)
    for n, it in enumerate(gw.interactions(slot)):
        body = client_body(it, slot)
        del body["stream_options"]
        with gw.stream(client_path(it, slot), body) as response:
            got = read_stream(response)
        recorded = parse_sse(it.sse_body)
        assert sum(map(is_usage_chunk, recorded)) == 1
        # Everything the real API sent, in order, but the usage chunk; still ends with [DONE].
        assert comparable(got) == comparable([e for e in recorded if not is_usage_chunk(e)], slot.model_id)
        assert got[-1].data == "[DONE]"
        # The gateway still asked the upstream for usage (it bills from it).
        sent = replay.requests[n].json
        assert sent["stream_options"] == {"include_usage": True}
        assert {k: v for k, v in sent.items() if k != "stream_options"} == {
            k: v for k, v in it.request_json.items() if k != "stream_options"
        }
    replay.assert_all_served()


# ---------------------------------------------------------------- the official SDKs on the fast path


def test_openai_sdk_chat_json(gw: ReplayGateway) -> None:
    slot = SDK_SLOTS["chat-json"]
    (it,) = gw.interactions(slot)
    body = client_body(it, slot)
    completion = gw.openai.chat.completions.create(**body)
    assert completion.to_dict(mode="json") == as_named(it.response_json, slot.model_id)
    assert gw.replay(slot).requests[0].json == it.request_json


def test_openai_sdk_chat_stream_with_tool_call(gw: ReplayGateway) -> None:
    slot = SDK_SLOTS["chat-sse"]
    for n, it in enumerate(gw.interactions(slot)):
        body = client_body(it, slot)
        with gw.openai.chat.completions.create(**body) as stream:
            chunks = [chunk.to_dict(mode="json") for chunk in stream]
        recorded = [as_named(e.payload, slot.model_id) for e in parse_sse(it.sse_body) if e.data != "[DONE]"]
        assert chunks == recorded
        assert gw.replay(slot).requests[n].json == it.request_json
    gw.replay(slot).assert_all_served()


def test_openai_sdk_responses_json(gw: ReplayGateway) -> None:
    slot = SDK_SLOTS["responses-json"]
    (it,) = gw.interactions(slot)
    response = gw.openai.responses.create(**client_body(it, slot))
    assert response.to_dict(mode="json") == as_named(it.response_json, slot.model_id)
    assert response.output_text
    assert gw.replay(slot).requests[0].json == it.request_json


def test_openai_sdk_responses_stream(gw: ReplayGateway) -> None:
    slot = SDK_SLOTS["responses-sse"]
    (it,) = gw.interactions(slot)
    with gw.openai.responses.create(**client_body(it, slot)) as stream:
        events = [event.to_dict(mode="json") for event in stream]
    assert events == [as_named(e.payload, slot.model_id) for e in parse_sse(it.sse_body)]
    assert gw.replay(slot).requests[0].json == it.request_json


def test_anthropic_sdk_messages_json(gw: ReplayGateway) -> None:
    slot = SDK_SLOTS["messages-json"]
    for n, it in enumerate(gw.interactions(slot)):
        body = client_body(it, slot)
        message = gw.anthropic.beta.messages.create(**body)
        assert message.to_dict(mode="json") == as_named(it.response_json, slot.model_id)
        assert gw.replay(slot).requests[n].json == it.request_json
    gw.replay(slot).assert_all_served()


def test_anthropic_sdk_messages_stream(gw: ReplayGateway) -> None:
    slot = SDK_SLOTS["messages-sse"]
    (it,) = gw.interactions(slot)
    body = client_body(it, slot)
    events = []
    with gw.anthropic.beta.messages.create(**body) as stream:
        for event in stream:
            events.append(event.to_dict(mode="json"))
    # The SDK drops `ping`s; everything else arrives as the real API sent it.
    recorded = [as_named(e.payload, slot.model_id) for e in parse_sse(it.sse_body) if e.event != "ping"]
    assert events == recorded
    assert gw.replay(slot).requests[0].json == it.request_json
