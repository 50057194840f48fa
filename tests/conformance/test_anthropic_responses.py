"""Messages responses (non-stream): recorded bodies → canonical → the body a Messages client gets.

- same protocol: the re-encoded body equals the recorded one exactly (the model name is the one the
  client asked for, here the recorded one);
- from another protocol's point of view (no hints): the body still validates as the SDK's `Message`
  and carries the same facts (blocks, tool inputs, thinking signatures, stop reason, usage);
- usage normalisation: canonical input counts include cache reads and writes, Anthropic's exclude them,
  and the mapping is exact both ways;
- error bodies: our Messages error shape matches the recorded API errors.
"""

from __future__ import annotations

import copy
from typing import Any

import anthropic.types as sdk
import pytest

from modelport.core import CanonicalResponse, OpaquePart, ReasoningPart, StopReason, TextPart, ToolCallPart, Usage
from modelport.protocols.anthropic_messages import CODEC, decode_response, encode_response, usage_from_body
from tests.support.cassettes import Interaction, interactions

RECORDED = interactions("anthropic_messages", path="/v1/messages")
JSON_OK = [it for it in RECORDED if it.status == 200 and not it.is_sse]
ERRORS = [it for it in RECORDED if it.status >= 400]


def test_recordings_cover_json_responses_and_errors() -> None:
    assert len(JSON_OK) >= 10
    assert len(ERRORS) >= 2


def _facts(message: sdk.Message) -> dict[str, Any]:
    blocks: list[tuple[Any, ...]] = []
    for block in message.content:
        if block.type == "text":
            blocks.append(("text", block.text))
        elif block.type == "thinking":
            blocks.append(("thinking", block.thinking, block.signature))
        elif block.type == "redacted_thinking":
            blocks.append(("redacted", block.data))
        elif block.type == "tool_use":
            blocks.append(("tool_use", block.id, block.name, block.input))
        else:
            blocks.append((block.type,))
    u = message.usage
    return {
        "blocks": blocks,
        "stop_reason": message.stop_reason,
        "stop_sequence": message.stop_sequence,
        "usage": (u.input_tokens, u.output_tokens, u.cache_creation_input_tokens or 0, u.cache_read_input_tokens or 0),
    }


@pytest.mark.parametrize("it", JSON_OK, ids=lambda it: it.id)
def test_same_protocol_response_is_exact(it: Interaction) -> None:
    original = copy.deepcopy(it.response_json)
    resp = decode_response(it.response_json)
    assert it.response_json == original, "decoding must not mutate the upstream body"
    assert encode_response(resp, original["model"]) == original


@pytest.mark.parametrize("it", JSON_OK, ids=lambda it: it.id)
def test_response_without_hints_validates_and_keeps_facts(it: Interaction) -> None:
    recorded = sdk.Message.model_validate(it.response_json)
    resp = decode_response(copy.deepcopy(it.response_json))
    resp.source_protocol, resp.extras = None, {}
    body = encode_response(resp, "anthropic/claude-test")
    ours = sdk.Message.model_validate(body)
    assert body["id"].startswith("msg_") and body["model"] == "anthropic/claude-test"
    assert list(body) == ["id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"]
    assert list(body["usage"]) == [  # the recorded order, with the breakdown by cache lifetime
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "cache_creation",
        "output_tokens",
    ]
    assert _facts(ours) == _facts(recorded)


@pytest.mark.parametrize("it", JSON_OK, ids=lambda it: it.id)
def test_usage_normalisation_both_ways(it: Interaction) -> None:
    raw = it.response_json["usage"]
    usage = usage_from_body(it.response_json)
    assert usage is not None
    cache_read = raw.get("cache_read_input_tokens") or 0
    cache_write = raw.get("cache_creation_input_tokens") or 0
    assert usage.input_tokens == raw["input_tokens"] + cache_read + cache_write
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (cache_read, cache_write)
    assert usage.uncached_input_tokens == raw["input_tokens"]
    assert usage.output_tokens == raw["output_tokens"]
    assert CODEC.usage_from_body(it.response_json) == usage


def test_prompt_cache_recording_is_normalised() -> None:
    """The cache cassette: the second call both reads (1111) and writes (418) the cache; Anthropic's
    ``input_tokens`` (3) is only the uncached rest."""
    second = next(it for it in JSON_OK if it.id == "test_anthropic_cache_real_api#1")
    raw = second.response_json["usage"]
    usage = usage_from_body(second.response_json)
    assert usage is not None
    assert raw["cache_read_input_tokens"] > 0 and raw["cache_creation_input_tokens"] > 0
    assert usage.input_tokens == 3 + 418 + 1111
    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.uncached_input_tokens) == (1111, 418, 3)
    resp = decode_response(copy.deepcopy(second.response_json))
    resp.source_protocol, resp.extras = None, {}
    assert encode_response(resp, "m")["usage"] == {
        "input_tokens": 3,
        "cache_creation_input_tokens": 418,
        "cache_read_input_tokens": 1111,
        "cache_creation": raw["cache_creation"],  # as recorded: {5m: 418, 1h: 0}
        "output_tokens": raw["output_tokens"],
    }


def test_decoded_parts_follow_the_blocks() -> None:
    by_id = {it.id: decode_response(copy.deepcopy(it.response_json)) for it in JSON_OK}
    thinking = by_id["test_anthropic_model_thinking_part#0"]
    assert isinstance(thinking.content[0], ReasoningPart) and thinking.content[0].signature
    assert isinstance(thinking.content[1], TextPart)
    parallel = by_id["test_multiple_parallel_tool_calls#0"]
    calls = parallel.tool_calls
    assert [c.arguments for c in calls] == [
        '{"name":"Alice"}',
        '{"name":"Bob"}',
        '{"name":"Charlie"}',
        '{"name":"Daisy"}',
    ]
    assert parallel.stop_reason == StopReason.TOOL_USE
    stop = by_id["test_stop_settings[anthropic]#0"]
    assert (stop.stop_reason, stop.stop_sequence) == (StopReason.STOP_SEQUENCE, "Paris")


def test_unknown_blocks_are_kept_opaque_and_only_messages_gets_them() -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
            {"type": "some_future_block", "payload": [1, 2]},
            {"type": "text", "text": "done", "citations": None},
        ],
        "stop_reason": "pause_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 4},
    }
    resp = decode_response(copy.deepcopy(body))
    assert [type(p) for p in resp.content] == [OpaquePart, OpaquePart, TextPart]
    assert resp.stop_reason == StopReason.PAUSE_TURN
    assert encode_response(resp, "claude-x")["content"] == body["content"]
    # A Chat upstream never produces Messages opaque parts, and foreign opaque parts are skipped.
    foreign = CanonicalResponse(
        id="chatcmpl-9",
        model="gpt",
        created=0,
        content=[OpaquePart(protocol="openai_responses", data={"type": "web_search_call"}), TextPart(text="hi")],
        stop_reason=StopReason.END_TURN,
        usage=Usage(input_tokens=10, output_tokens=2, cache_read_tokens=4),
    )
    out = encode_response(foreign, "openai/gpt")
    assert out["content"] == [{"type": "text", "text": "hi"}]
    assert out["id"] == "msg_chatcmpl9"
    assert out["usage"] == {
        "input_tokens": 6,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 4,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": 2,
    }
    sdk.Message.model_validate(out)


def test_partial_tool_input_becomes_the_parsed_prefix() -> None:
    """A tool call cut by max_tokens (streamed upstream, non-stream client) still yields an object: the
    complete prefix, an unfinished string dropped, as the SDK's own partial-JSON accumulation does."""
    resp = CanonicalResponse(
        id="msg_x",
        model="m",
        created=0,
        content=[ToolCallPart(id="toolu_1", name="make_file", arguments='{"filename": "taxes.txt", "lines": ["a", "b')],
        stop_reason=StopReason.MAX_TOKENS,
    )
    body = encode_response(resp, "m")
    assert body["content"][0]["input"] == {"filename": "taxes.txt", "lines": ["a"]}
    assert body["stop_reason"] == "max_tokens"
    sdk.Message.model_validate(body)


@pytest.mark.parametrize("it", ERRORS, ids=lambda it: it.id)
def test_error_body_has_the_recorded_shape(it: Interaction) -> None:
    recorded = it.response_json
    ours = CODEC.error_body(recorded["error"]["message"], recorded["error"]["type"])
    assert ours["type"] == recorded["type"] == "error"
    assert ours["error"] == recorded["error"]
    with_param = CODEC.error_body("bad", "invalid_request_error", param="max_tokens")
    assert with_param["error"]["param"] == "max_tokens"
