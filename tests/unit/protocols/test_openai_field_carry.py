"""Client fields the other OpenAI protocol expresses are translated, not dropped (issue 8, defect 6)."""

from __future__ import annotations

from typing import Any

import pytest

from modelport.errors import InvalidParameters
from modelport.protocols import get_codec

RESPONSES = get_codec("openai_responses")
CHAT = get_codec("openai_chat")
SHARED = {
    "prompt_cache_key": "user-42-repo",
    "prompt_cache_retention": "24h",
    "store": False,
    "service_tier": "flex",
    "safety_identifier": "hash-of-user",
}


def test_chat_client_fields_reach_a_responses_upstream() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "logprobs": True,
        "top_logprobs": 3,
        "parallel_tool_calls": False,
        "user": "u-1",
        "metadata": {"run": "7"},
        **SHARED,
    }
    upstream = RESPONSES.encode_request(CHAT.decode_request(body), "gpt")
    assert {k: upstream.get(k) for k in SHARED} == SHARED
    assert upstream["include"] == ["message.output_text.logprobs"] and upstream["top_logprobs"] == 3
    assert upstream["metadata"] == {"run": "7"}


def test_responses_client_fields_reach_a_chat_upstream() -> None:
    body = {
        "model": "m",
        "input": "hi",
        "include": ["message.output_text.logprobs", "reasoning.encrypted_content"],
        "top_logprobs": 2,
        **SHARED,
    }
    upstream = CHAT.encode_request(RESPONSES.decode_request(body), "gpt")
    assert {k: upstream.get(k) for k in SHARED} == SHARED
    assert upstream["logprobs"] is True and upstream["top_logprobs"] == 2
    assert "include" not in upstream


def test_fields_of_an_openai_client_do_not_leak_to_anthropic() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "logprobs": True, **SHARED}
    upstream = get_codec("anthropic_messages").encode_request(CHAT.decode_request(body), "claude")
    assert not set(upstream) & {*SHARED, "logprobs", "include"}


SCHEMA = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}


def test_structured_output_crosses_between_messages_and_openai() -> None:
    messages = get_codec("anthropic_messages")
    claude = {
        "model": "m",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "title?"}],
        "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}},
    }
    chat = CHAT.encode_request(messages.decode_request(claude), "gpt")
    assert chat["response_format"]["type"] == "json_schema"
    assert chat["response_format"]["json_schema"]["schema"] == SCHEMA
    responses = RESPONSES.encode_request(messages.decode_request(claude), "gpt")
    assert responses["text"]["format"]["type"] == "json_schema" and responses["text"]["format"]["schema"] == SCHEMA
    openai = {
        "model": "m",
        "messages": [{"role": "user", "content": "title?"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "t", "schema": SCHEMA}},
    }
    upstream = messages.encode_request(CHAT.decode_request(openai), "claude")
    assert upstream["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    as_object = messages.encode_request(
        CHAT.decode_request({**openai, "response_format": {"type": "json_object"}}), "c"
    )
    assert as_object["output_config"]["format"]["schema"] == {"type": "object"}


def _codex_request(*extra_tools: dict[str, Any]) -> dict[str, Any]:
    namespace = {
        "type": "namespace",
        "name": "multi_agent_v1",
        "tools": [{"type": "function", "name": "close_agent", "parameters": {"type": "object"}, "strict": False}],
    }
    shell = {"type": "function", "name": "exec_command", "parameters": {"type": "object"}}
    return {"model": "m", "input": "hi", "tools": [shell, namespace, {"type": "web_search"}, *extra_tools]}


def test_codex_namespace_tools_are_offered_to_other_upstreams_and_free_form_tools_refused() -> None:
    messages = get_codec("anthropic_messages")
    chat = CHAT.encode_request(RESPONSES.decode_request(_codex_request()), "gpt")
    assert [t["function"]["name"] for t in chat["tools"]] == ["exec_command", "close_agent"]
    claude = messages.encode_request(RESPONSES.decode_request(_codex_request()), "claude")
    assert [t["name"] for t in claude["tools"]] == ["exec_command", "close_agent"]
    custom: dict[str, Any] = {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}}
    for codec in (CHAT, messages):
        with pytest.raises(InvalidParameters) as refused:
            codec.encode_request(RESPONSES.decode_request(_codex_request(custom)), "x")
        assert refused.value.param == "tools[3].type" and "'custom'" in str(refused.value)
    # A Responses upstream gets every tool as sent.
    sent = _codex_request(custom)
    assert RESPONSES.encode_request(RESPONSES.decode_request(sent), "gpt")["tools"][1:] == sent["tools"][1:]
