"""Translated path against recorded real traffic: the upstream answers as recorded, the client speaks another
protocol.

Every ordered pair of protocols is covered, streaming and not. The client's answer must have its own
protocol's shape (OpenAPI schemas for Chat and Responses, the anthropic SDK's types for Messages) and carry
the recorded answer's facts: text, tool calls with their arguments, stop reason, and usage with cache
tokens mapped per DESIGN.md §3. What the gateway sent upstream must be a valid request of the upstream's
protocol carrying the client's prompt and tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.integration.conformance_gateway import facts as wire_facts
from tests.integration.conformance_gateway.client_shapes import (
    check_body,
    check_stream,
    client_request,
    first_user_text,
    function_tools,
)
from tests.integration.conformance_gateway.replay_gateway import CLIENT_PATH, ReplayGateway, Slot
from tests.integration.conformance_gateway.sse_wire import parse_sse, read_stream
from tests.support.cassettes import Interaction
from tests.support.openapi_schema import ANTHROPIC_SPEC, assert_valid

CHAT, RESPONSES, MESSAGES = "openai_chat", "openai_responses", "anthropic_messages"


@dataclass(frozen=True)
class Case:
    slot: Slot
    client: str
    turns: int = 1  # how many recorded interactions to play, from the first
    extra: dict[str, Any] = field(default_factory=dict)  # added to the client request
    upstream_has: dict[str, Any] = field(default_factory=dict)  # expected in the upstream request

    @property
    def id(self) -> str:
        return f"{self.client}<-{self.slot.cassette.split('/')[1].removeprefix('test_')}"


def _case(name: str, cassette: str, client: str, **kw: Any) -> Case:
    return Case(Slot(name, cassette), client, **kw)


CASES = [
    # Chat client, Messages upstream
    _case("c-m-text", "anthropic_messages/test_anthropic_model_instructions", CHAT),
    _case("c-m-parallel", "anthropic_messages/test_multiple_parallel_tool_calls", CHAT),
    _case("c-m-cache", "anthropic_messages/test_anthropic_cache_real_api", CHAT, turns=2),
    _case(
        "c-m-stop",
        "anthropic_messages/test_stop_settings[anthropic]",
        CHAT,
        extra={"stop": ["Paris"]},
        upstream_has={"stop_sequences": ["Paris"]},
    ),
    _case("c-m-stream", "anthropic_messages/test_request_stream_fallback_for_high_max_tokens", CHAT),
    _case("c-m-thinking-stream", "anthropic_messages/test_anthropic_model_thinking_part_stream", CHAT),
    _case("c-m-tool-stream", "anthropic_messages/test_anthropic_native_tool_search_streaming", CHAT),
    # Chat client, Responses upstream
    _case("c-r-text", "openai_responses/test_openai_responses_model_simple_response", CHAT),
    _case("c-r-reasoning-tool-stream", "openai_responses/test_openai_responses_streaming_usage", CHAT),
    _case("c-r-tool-stream", "openai_responses/test_openai_responses_stream", CHAT, turns=2),
    # Responses client, Chat upstream
    _case("r-c-text", "openai_chat/test_valid_response", RESPONSES),
    _case("r-c-cache", "openai_chat/test_openai_chat_prompt_cache_e2e", RESPONSES, turns=2),
    _case("r-c-stream", "openai_chat/test_dbos_model_stream_direct", RESPONSES),
    _case("r-c-tool-stream", "openai_chat/test_run_stream_sync_streams_real_model", RESPONSES, turns=2),
    _case("r-c-parallel-stream", "openai_chat/test_complex_agent_run", RESPONSES),
    # Responses client, Messages upstream
    _case("r-m-text", "anthropic_messages/test_anthropic_model_instructions", RESPONSES),
    _case("r-m-cache", "anthropic_messages/test_anthropic_cache_real_api", RESPONSES, turns=2),
    _case("r-m-thinking-stream", "anthropic_messages/test_anthropic_model_thinking_part_stream", RESPONSES),
    _case("r-m-tool-stream", "anthropic_messages/test_anthropic_native_tool_search_streaming", RESPONSES),
    # Messages client, Chat upstream
    _case("m-c-text", "openai_chat/test_valid_response", MESSAGES),
    _case("m-c-cache", "openai_chat/test_openai_chat_prompt_cache_e2e", MESSAGES, turns=2),
    _case("m-c-tool-stream", "openai_chat/test_run_stream_sync_streams_real_model", MESSAGES, turns=2),
    _case("m-c-parallel-stream", "openai_chat/test_complex_agent_run", MESSAGES),
    # Messages client, Responses upstream
    _case("m-r-text", "openai_responses/test_openai_responses_model_simple_response", MESSAGES),
    _case("m-r-tool-stream", "openai_responses/test_openai_responses_stream", MESSAGES, turns=2),
    _case("m-r-reasoning-tool-stream", "openai_responses/test_openai_responses_streaming_usage", MESSAGES),
    _case("m-r-reasoning-stream", "openai_responses/test_openai_responses_thinking_part_iter", MESSAGES),
]

SLOTS = [c.slot for c in CASES]

# Which request schema the upstream's body must satisfy.
UPSTREAM_REQUEST_SCHEMA = {
    CHAT: ("CreateChatCompletionRequest", None),
    RESPONSES: ("CreateResponse", None),
    MESSAGES: ("CreateMessageRequest", ANTHROPIC_SPEC),
}


def recorded_facts(folder: str, it: Interaction) -> wire_facts.Facts:
    if it.is_sse:
        return wire_facts.STREAM[folder](parse_sse(it.sse_body))
    return wire_facts.BODY[folder](it.response_json)


def ask(gw: ReplayGateway, case: Case, it: Interaction) -> wire_facts.Facts:
    """Send the client request for one recorded turn; check its shape; return its facts."""
    folder = case.slot.folder
    body = client_request(
        case.client,
        case.slot.model_id,
        first_user_text(folder, it.request_json),
        function_tools(folder, it.request_json),
        stream=it.is_sse,
    )
    body.update(case.extra)
    if it.is_sse:
        with gw.stream(CLIENT_PATH[case.client], body) as response:
            events = read_stream(response)
        check_stream(case.client, events)
        return wire_facts.STREAM[case.client](events)
    response = gw.post(CLIENT_PATH[case.client], body)
    assert response.status_code == 200, response.text
    check_body(case.client, response.json())
    return wire_facts.BODY[case.client](response.json())


def check_upstream_request(case: Case, it: Interaction, sent: dict[str, Any]) -> None:
    folder = case.slot.folder
    schema, spec = UPSTREAM_REQUEST_SCHEMA[folder]
    if spec is None:
        assert_valid(sent, schema)
    else:
        # The curated spec's `Tool` is a oneOf whose members do not constrain `type` (it relies on an
        # OpenAPI discriminator), so a custom tool matches several: check tools against `ToolCustom`.
        assert_valid({k: v for k, v in sent.items() if k != "tools"}, schema, spec)
        for tool in sent.get("tools") or []:
            assert_valid(tool, "ToolCustom", spec)
    assert first_user_text(folder, sent) == first_user_text(folder, it.request_json)
    assert [t[0] for t in function_tools(folder, sent)] == [t[0] for t in function_tools(folder, it.request_json)]
    assert bool(sent.get("stream")) == it.is_sse
    for key, value in case.upstream_has.items():
        assert sent.get(key) == value, f"upstream {key}: {sent.get(key)!r}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_translated_answer_keeps_the_recorded_facts(gw: ReplayGateway, case: Case) -> None:
    replay = gw.replay(case.slot)
    for n, it in enumerate(gw.interactions(case.slot)[: case.turns]):
        got = ask(gw, case, it)
        want = recorded_facts(case.slot.folder, it)
        assert got.text == want.text, f"{it.id}: text"
        assert got.tool_calls == want.tool_calls, f"{it.id}: tool calls"
        assert got.stop == want.stop, f"{it.id}: stop reason"
        assert (got.input_tokens, got.cache_read, got.output_tokens) == (
            want.input_tokens,
            want.cache_read,
            want.output_tokens,
        ), f"{it.id}: usage (input incl. cache, cache read, output)"
        if case.client != RESPONSES:  # Responses has no field for cache writes
            assert got.cache_write == want.cache_write, f"{it.id}: cache write tokens"
        if {case.client, case.slot.folder} == {RESPONSES, MESSAGES}:
            # Reasoning summaries <-> thinking blocks; several summary parts may be joined by blank lines.
            assert "".join(got.reasoning.split()) == "".join(want.reasoning.split()), f"{it.id}: reasoning text"
        check_upstream_request(case, it, replay.requests[n].json)
    assert not replay.misses
