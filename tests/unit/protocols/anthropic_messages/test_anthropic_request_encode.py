"""Canonical requests from other protocols (Chat, Responses) → a Messages body an Anthropic upstream takes."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from anthropic.types import ContentBlockParam, ThinkingConfigParam, ToolChoiceParam, ToolUnionParam
from pydantic import TypeAdapter

from modelport.core import (
    AudioPart,
    CanonicalRequest,
    FilePart,
    ImagePart,
    Message,
    OpaquePart,
    ReasoningConfig,
    ReasoningPart,
    RefusalPart,
    TextPart,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    ToolSpec,
)
from modelport.errors import InvalidParameters
from modelport.protocols.anthropic_messages import encode_request
from modelport.protocols.anthropic_messages.request_encode import DEFAULT_MAX_TOKENS

_BLOCK = TypeAdapter(ContentBlockParam)
_TOOL = TypeAdapter(ToolUnionParam)
_TOOL_CHOICE = TypeAdapter(ToolChoiceParam)
_THINKING = TypeAdapter(ThinkingConfigParam)


def chat_request(**kwargs: Any) -> CanonicalRequest:
    kwargs.setdefault("messages", [Message(role="user", parts=[TextPart(text="hi")])])
    return CanonicalRequest(model="anthropic/claude", source_protocol="openai_chat", **kwargs)


def assert_blocks_valid(body: dict[str, Any]) -> None:
    for msg in body["messages"]:
        assert msg["role"] in ("user", "assistant")
        if isinstance(msg["content"], list):
            assert msg["content"]
            for block in msg["content"]:
                _BLOCK.validate_python(block)
    for tool in body.get("tools", []):
        _TOOL.validate_python(tool)
    if "tool_choice" in body:
        _TOOL_CHOICE.validate_python(body["tool_choice"])
    if "thinking" in body:
        _THINKING.validate_python(body["thinking"])


def test_chat_tool_round_trip_becomes_messages_turns() -> None:
    req = chat_request(
        system=[TextPart(text="You are terse."), TextPart(text="Answer in French.")],
        messages=[
            Message(role="user", parts=[TextPart(text="Weather in Paris and Rome?")]),
            Message(
                role="assistant",
                parts=[
                    ReasoningPart(text="openai reasoning summary", id="rs_1", encrypted_content="gAAA"),
                    TextPart(text="Checking."),
                    ToolCallPart(id="call_1", name="weather", arguments='{"city": "Paris"}'),
                    ToolCallPart(id="call_2", name="weather", arguments='{"city": "Rome"}'),
                ],
            ),
            Message(role="tool", parts=[ToolResultPart(tool_call_id="call_1", content="20C", name="weather")]),
            Message(role="tool", parts=[ToolResultPart(tool_call_id="call_2", content="25C", name="weather")]),
            Message(role="user", parts=[TextPart(text="And tomorrow?")]),
        ],
        tools=[ToolSpec(name="weather", description="w", parameters={"type": "object"}, strict=True)],
        tool_choice=ToolChoice(mode="required"),
        parallel_tool_calls=False,
        stop=["STOP"],
        temperature=1.6,
        user="end-user-42",
        stream=True,
        extras={"logprobs": True, "prompt_cache_key": "k"},
    )
    body = encode_request(req, "claude-sonnet-4-5")
    assert_blocks_valid(body)
    assert body["model"] == "claude-sonnet-4-5"
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS  # Messages requires it; the Chat client gave none
    assert body["system"] == "You are terse.\n\nAnswer in French."
    assert body["messages"] == [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": [
                # The OpenAI reasoning has no Anthropic signature: replaying it would be rejected.
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "call_2", "name": "weather", "input": {"city": "Rome"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "20C"},
                {"type": "tool_result", "tool_use_id": "call_2", "content": "25C"},
                {"type": "text", "text": "And tomorrow?"},
            ],
        },
    ]
    assert body["tools"] == [{"name": "weather", "description": "w", "input_schema": {"type": "object"}}]
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert body["stop_sequences"] == ["STOP"]
    assert body["temperature"] == 1.0  # Chat allows up to 2, Messages up to 1
    assert body["metadata"] == {"user_id": "end-user-42"}
    assert body["stream"] is True
    assert "logprobs" not in body and "prompt_cache_key" not in body  # Chat-only extras stay behind


def test_media_parts() -> None:
    pdf = base64.b64encode(b"%PDF-1.4 ...").decode()
    text = base64.b64encode(b"plain words").decode()
    req = chat_request(
        messages=[
            Message(
                role="user",
                parts=[
                    ImagePart(url="https://example.com/cat.png", detail="high"),
                    ImagePart(data="iVBORw0KGgo=", media_type="image/png"),
                    FilePart(data=pdf, media_type="application/pdf", filename="report.pdf"),
                    FilePart(url="https://example.com/doc.pdf"),
                    FilePart(data=text, media_type="text/plain"),
                    FilePart(data="iVBORw0KGgo=", media_type="image/png"),
                    OpaquePart(protocol="openai_responses", data={"type": "input_something"}),
                ],
            )
        ]
    )
    body = encode_request(req, "m")
    assert_blocks_valid(body)
    assert body["messages"][0]["content"] == [
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": pdf},
            "title": "report.pdf",
        },
        {"type": "document", "source": {"type": "url", "url": "https://example.com/doc.pdf"}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "plain words"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
    ]


@pytest.mark.parametrize(
    "part",
    [
        AudioPart(data="UklGRg==", format="wav"),
        FilePart(data="AAAA", media_type="video/mp4"),
        FilePart(url="https://example.com/clip.mp4", media_type="video/mp4"),
    ],
    ids=["audio", "inline video", "video url"],
)
def test_media_messages_cannot_take_is_a_400(part: Any) -> None:
    req = chat_request(messages=[Message(role="user", parts=[TextPart(text="see"), part])])
    with pytest.raises(InvalidParameters) as caught:
        encode_request(req, "m")
    assert caught.value.status == 400


def test_tool_result_with_image_and_error_flag() -> None:
    req = chat_request(
        messages=[
            Message(role="assistant", parts=[ToolCallPart(id="t1", name="shot", arguments="")]),
            Message(
                role="tool",
                parts=[
                    ToolResultPart(
                        tool_call_id="t1",
                        content=(TextPart(text="here"), ImagePart(url="https://example.com/s.png")),
                        is_error=True,
                    )
                ],
            ),
        ]
    )
    body = encode_request(req, "m")
    assert_blocks_valid(body)
    assert body["messages"][0]["content"][0]["input"] == {}  # a call without arguments
    assert body["messages"][1]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "t1",
            "content": [
                {"type": "text", "text": "here"},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/s.png"}},
            ],
            "is_error": True,
        }
    ]


def test_signed_reasoning_and_refusals_from_an_anthropic_answer_replay() -> None:
    req = chat_request(
        messages=[
            Message(role="user", parts=[TextPart(text="q")]),
            Message(
                role="assistant",
                parts=[
                    ReasoningPart(text="think", signature="sig=="),
                    ReasoningPart(redacted="blob"),
                    RefusalPart(text="I can't help with that."),
                ],
            ),
            Message(role="assistant", parts=[ReasoningPart(text="unsigned")]),  # nothing left: dropped
            Message(role="user", parts=[TextPart(text="ok")]),
        ]
    )
    body = encode_request(req, "m")
    assert_blocks_valid(body)
    assert body["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "think", "signature": "sig=="},
        {"type": "redacted_thinking", "data": "blob"},
        {"type": "text", "text": "I can't help with that."},
    ]
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]


@pytest.mark.parametrize(
    ("reasoning", "max_tokens", "thinking", "keeps_temperature"),
    [
        (ReasoningConfig(effort="high"), 32000, {"type": "enabled", "budget_tokens": 16384}, False),
        # The budget leaves room for the answer: at least 1024 tokens (or a quarter of the cap).
        (ReasoningConfig(effort="medium"), 4000, {"type": "enabled", "budget_tokens": 2976}, False),
        (ReasoningConfig(effort="medium"), 2000, None, True),  # 976 left for thinking: below the minimum
        (ReasoningConfig(), 32000, {"type": "enabled", "budget_tokens": 8192}, False),  # on, no budget: medium
        (ReasoningConfig(effort="low"), 1000, None, True),  # no room for the 1024-token minimum
        (ReasoningConfig(budget_tokens=2048), 8192, {"type": "enabled", "budget_tokens": 2048}, False),
        (ReasoningConfig(effort="none", enabled=False), 8192, None, True),
        (None, 8192, None, True),
    ],
)
def test_reasoning_becomes_a_thinking_budget(
    reasoning: ReasoningConfig | None, max_tokens: int, thinking: dict[str, Any] | None, keeps_temperature: bool
) -> None:
    body = encode_request(chat_request(reasoning=reasoning, max_output_tokens=max_tokens, temperature=0.2), "m")
    assert body.get("thinking") == thinking
    assert body["max_tokens"] == max_tokens
    # Extended thinking refuses custom sampling: the setting is dropped rather than failing upstream.
    assert ("temperature" in body) is keeps_temperature


@pytest.mark.parametrize(
    ("choice", "parallel", "expected"),
    [
        (ToolChoice(mode="auto"), None, {"type": "auto"}),
        (ToolChoice(mode="none"), None, {"type": "none"}),
        (ToolChoice(mode="named", name="f"), None, {"type": "tool", "name": "f"}),
        (None, False, {"type": "auto", "disable_parallel_tool_use": True}),
        (None, None, None),
    ],
)
def test_tool_choice(choice: ToolChoice | None, parallel: bool | None, expected: dict[str, Any] | None) -> None:
    req = chat_request(tools=[ToolSpec(name="f")], tool_choice=choice, parallel_tool_calls=parallel)
    body = encode_request(req, "m")
    assert body["tools"] == [{"name": "f", "input_schema": {"type": "object", "properties": {}}}]
    assert body.get("tool_choice") == expected


def test_no_tool_choice_without_tools() -> None:
    body = encode_request(chat_request(tool_choice=ToolChoice(mode="auto")), "m")
    assert "tool_choice" not in body and "tools" not in body


def test_bad_tool_arguments_do_not_break_the_request() -> None:
    req = chat_request(
        messages=[
            Message(role="assistant", parts=[ToolCallPart(id="a", name="f", arguments="not json")]),
            Message(role="assistant", parts=[ToolCallPart(id="b", name="f", arguments="[1, 2]")]),
        ]
    )
    body = encode_request(req, "m")
    assert [b["input"] for b in body["messages"][0]["content"]] == [{}, {}]
    json.dumps(body)
