"""Chat Completions non-stream responses: recorded body → canonical → encoded body.

- Same protocol: the encoded body equals the recorded one exactly (`model` is the client's name).
- Canonical only (no Chat extras): the body validates against ``CreateChatCompletionResponse`` and says
  the same things (text, refusal, tool calls, finish reason, usage).
Recorded errors validate against ``ErrorResponse`` and `error_body` produces the same shape.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelport.core import StopReason, Usage
from modelport.protocols.openai_chat import CODEC, decode_response, encode_response
from tests.support.cassettes import Interaction, interactions
from tests.support.openapi_schema import assert_valid

CALLS = interactions("openai_chat", path="/v1/chat/completions")
JSON_OK = [it for it in CALLS if it.status == 200 and not it.is_sse]
ERRORS = [it for it in CALLS if it.status != 200]


def test_recordings_cover_json_answers_and_errors() -> None:
    assert len(JSON_OK) >= 10 and len(ERRORS) >= 3


@pytest.mark.parametrize("it", JSON_OK, ids=lambda it: it.id)
def test_same_protocol_round_trip_is_exact(it: Interaction) -> None:
    resp = decode_response(it.response_json)
    assert encode_response(resp, it.response_json["model"]) == it.response_json


def _facts(body: dict[str, Any]) -> dict[str, Any]:
    choice = body["choices"][0]
    message = choice["message"]
    return {
        "content": message.get("content") or None,
        "refusal": message.get("refusal"),
        "tool_calls": [
            (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []
        ],
        "finish_reason": choice["finish_reason"],
        "usage": {k: body["usage"][k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")},
        "cached": body["usage"]["prompt_tokens_details"]["cached_tokens"],
        "reasoning": body["usage"]["completion_tokens_details"]["reasoning_tokens"],
    }


@pytest.mark.parametrize("it", JSON_OK, ids=lambda it: it.id)
def test_canonical_encoding_is_valid_and_faithful(it: Interaction) -> None:
    resp = decode_response(it.response_json)
    resp.source_protocol = None
    body = encode_response(resp, "openai/gpt-4o")
    assert_valid(body, "CreateChatCompletionResponse")
    assert body["model"] == "openai/gpt-4o" and body["id"] == it.response_json["id"]
    assert _facts(body) == _facts(it.response_json)


def test_usage_is_normalised() -> None:
    it = next(i for i in JSON_OK if i.id == "test_openai_chat_prompt_cache_e2e#1")
    usage = CODEC.usage_from_body(it.response_json)
    assert usage == Usage(
        input_tokens=4020, output_tokens=4, cache_read_tokens=4012, reasoning_tokens=0, service_tier="default"
    )
    assert usage is not None and usage.uncached_input_tokens == 8
    first = next(i for i in JSON_OK if i.id == "test_openai_chat_prompt_cache_e2e#0")
    assert CODEC.usage_from_body(first.response_json) == Usage(
        input_tokens=4020, output_tokens=4, cache_write_tokens=4012, reasoning_tokens=0, service_tier="default"
    )
    reasoning = next(i for i in JSON_OK if i.id == "test_max_completion_tokens[o3-mini]#0")
    assert decode_response(reasoning.response_json).usage == Usage(
        input_tokens=7, output_tokens=87, reasoning_tokens=64, service_tier="default"
    )


def test_tool_call_answer() -> None:
    it = next(i for i in JSON_OK if i.id == "test_tool_choice_matrix[required-openai]#0")
    resp = decode_response(it.response_json)
    assert resp.stop_reason is StopReason.TOOL_USE
    [call] = resp.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_injwxidE5XUzmiKVfOH3rxf2", "get_weather", '{"city":"Paris"}')
    assert resp.text == ""


def test_refusal_maps_to_refusal_stop_reason() -> None:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "logprobs": None,
                "message": {"role": "assistant", "content": None, "refusal": "I can't help with that."},
            }
        ],
    }
    resp = decode_response(body)
    assert resp.stop_reason is StopReason.REFUSAL and resp.refusal == "I can't help with that."
    resp.source_protocol = None
    out = encode_response(resp, "openai/gpt-4o")
    assert_valid(out, "CreateChatCompletionResponse")
    assert out["choices"][0]["message"]["refusal"] == "I can't help with that."
    assert out["choices"][0]["message"]["content"] is None
    assert out["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize("it", ERRORS, ids=lambda it: it.id)
def test_error_body_matches_recorded_shape(it: Interaction) -> None:
    assert_valid(it.response_json, "ErrorResponse")
    error = it.response_json["error"]
    ours = CODEC.error_body(error["message"], error["type"], code=error["code"], param=error["param"])
    assert ours == it.response_json
