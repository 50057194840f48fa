"""Chat Completions requests: every recorded request body survives decode → canonical → encode.

Two checks per recorded request:
- same protocol (Chat client → Chat upstream): the encoded body equals the recorded one exactly, except
  `model`, which the gateway replaces with the upstream's name;
- canonical only (shape hints and extras dropped, as when the request came from another protocol): the
  encoded body equals the recorded one after these documented normalisations:
  string content ≡ one text part; ``stop: "x"`` ≡ ``["x"]``; ``max_tokens`` ≡ ``max_completion_tokens``;
  ``content: null`` / ``refusal: null`` ≡ absent; top-level fields without a canonical slot
  (``prompt_cache_key``, ``moderation``, ...) and part-level extras (``prompt_cache_breakpoint``) are
  dropped; system/developer messages merge into one leading ``system`` message.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from modelport.core import (
    AudioPart,
    CanonicalRequest,
    FilePart,
    ImagePart,
    Message,
    ReasoningConfig,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    ToolSpec,
)
from modelport.protocols.openai_chat import decode_request, encode_request
from modelport.protocols.openai_chat.request_decode import _CANONICAL_FIELDS
from tests.support.cassettes import Interaction, interactions
from tests.support.openapi_schema import assert_valid

CHAT = interactions("openai_chat", path="/v1/chat/completions")


def test_every_chat_cassette_has_requests() -> None:
    assert len(CHAT) >= 20


@pytest.mark.parametrize("it", CHAT, ids=lambda it: it.id)
def test_recorded_request_is_valid_per_spec(it: Interaction) -> None:
    # Guards the test data and the schema helper: the recorded bodies are what the spec describes.
    assert_valid(it.request_json, "CreateChatCompletionRequest")


@pytest.mark.parametrize("it", CHAT, ids=lambda it: it.id)
def test_same_protocol_round_trip_is_exact(it: Interaction) -> None:
    original = copy.deepcopy(it.request_json)
    req = decode_request(it.request_json)
    assert it.request_json == original, "decoding must not mutate the client's body"
    body = encode_request(req, "upstream-model")
    assert body.pop("model") == "upstream-model"
    expected = dict(original)
    expected.pop("model")
    assert body == expected


def _text_parts(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [{k: v for k, v in part.items() if k != "prompt_cache_breakpoint"} for part in content]


def _semantic(body: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in body.items() if k in _CANONICAL_FIELDS}
    if "max_tokens" in out:
        out["max_completion_tokens"] = out.pop("max_tokens")
    if isinstance(out.get("stop"), str):
        out["stop"] = [out["stop"]]
    system: list[dict[str, Any]] = []
    messages = []
    for msg in out["messages"]:
        msg = {k: v for k, v in msg.items() if v is not None}
        if msg["role"] in ("system", "developer"):
            system.extend(_text_parts(msg["content"]))
            continue
        if "content" in msg:
            msg["content"] = _text_parts(msg["content"])
        messages.append(msg)
    out["messages"] = ([{"role": "system", "content": system}] if system else []) + messages
    return out


@pytest.mark.parametrize("it", CHAT, ids=lambda it: it.id)
def test_canonical_round_trip_is_semantically_equal(it: Interaction) -> None:
    req = decode_request(it.request_json)
    req.source_protocol = None  # as if another protocol's client sent it: no Chat hints, no extras
    body = encode_request(req, it.request_json["model"])
    assert_valid(body, "CreateChatCompletionRequest")
    assert _semantic(body) == _semantic(it.request_json)


def _by_id(cassette: str, position: int) -> Interaction:
    return next(it for it in CHAT if it.cassette == cassette and it.position == position)


def test_inline_image_decodes_to_base64_with_media_type() -> None:
    it = _by_id("test_image_url_input_force_download", 1)
    req = decode_request(it.request_json)
    [text, image] = req.messages[0].parts
    assert isinstance(text, TextPart) and text.text == "What is this vegetable?"
    assert isinstance(image, ImagePart) and image.url is None
    assert image.media_type == "image/jpeg"
    assert image.data is not None and image.data.startswith("/9j/")
    url = it.request_json["messages"][0]["content"][1]["image_url"]["url"]
    assert image.data_url == url


def test_tool_round_trip_decodes_calls_and_results() -> None:
    it = _by_id("test_complex_agent_run", 1)
    req = decode_request(it.request_json)
    assert [m.role for m in req.messages] == ["user", "assistant", "tool", "tool"]
    calls = req.messages[1].parts
    assert all(isinstance(c, ToolCallPart) for c in calls)
    assert [c.name for c in calls if isinstance(c, ToolCallPart)] == ["get_country", "get_product_name"]
    result = req.messages[2].parts[0]
    assert isinstance(result, ToolResultPart)
    assert result.tool_call_id == "call_q2UyBRP7eXNTzAoR8lEhjc9Z" and result.content == "Mexico"
    assert req.tool_choice is not None and req.tool_choice.mode == "required"
    assert [t.name for t in req.tools] == [t["function"]["name"] for t in it.request_json["tools"]]
    assert req.tools[0].parameters == it.request_json["tools"][0]["function"]["parameters"]
    assert req.stream and req.include_usage


def test_developer_role_goes_to_system_and_back() -> None:
    it = _by_id("test_openai_o1_mini_system_role[developer]", 0)
    req = decode_request(it.request_json)
    assert req.system_text == "You are a helpful assistant."
    assert [m.role for m in req.messages] == ["user"]
    assert encode_request(req, "m")["messages"][0]["role"] == "developer"
    req.source_protocol = None
    assert encode_request(req, "m")["messages"][0]["role"] == "system"


def test_max_completion_tokens_and_cache_fields() -> None:
    req = decode_request(_by_id("test_max_completion_tokens[o3-mini]", 0).request_json)
    assert req.max_output_tokens == 100
    cached = decode_request(_by_id("test_openai_chat_prompt_cache_e2e", 0).request_json)
    assert cached.extras["prompt_cache_key"] == "pydantic-ai-prompt-cache-e2e-chat"
    first = cached.messages[0].parts[0]
    assert first.extras == {"prompt_cache_breakpoint": {"mode": "explicit"}}


def test_encoded_file_and_audio_parts_are_valid_per_spec() -> None:
    body = {
        "model": "openai/gpt-4o",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "file", "file": {"file_id": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"}},
                    {"type": "file", "file": {"file_id": "https://example.com/v.mp4", "format": "video/mp4"}},
                    {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
                ],
            }
        ],
    }
    req = decode_request(body)
    pdf, video, audio = req.messages[0].parts
    assert isinstance(pdf, FilePart) and pdf.media_type == "application/pdf" and pdf.data == "JVBERi0="
    assert isinstance(video, FilePart) and video.is_video and video.url == "https://example.com/v.mp4"
    assert isinstance(audio, AudioPart) and audio.format == "wav"
    assert encode_request(req, "gpt-4o") == {**body, "model": "gpt-4o", "stream": False}
    req.source_protocol = None
    plain = encode_request(req, "gpt-4o")
    assert_valid(plain, "CreateChatCompletionRequest")
    assert plain["messages"][0]["content"][0]["file"] == {
        "filename": "a.pdf",
        "file_data": "data:application/pdf;base64,JVBERi0=",
    }
    assert plain["messages"][0]["content"][1]["file"] == {"file_id": "https://example.com/v.mp4", "format": "video/mp4"}


def test_request_from_another_protocol_encodes_to_valid_chat() -> None:
    """A canonical request as the Messages decoder builds it: tool results inside a user message,
    an image returned by a tool, reasoning on the assistant turn, several system blocks."""
    req = CanonicalRequest(
        model="anthropic/claude",
        system=[TextPart(text="Be brief.", extras={"cache_control": {"type": "ephemeral"}}), TextPart(text="Be kind.")],
        messages=[
            Message(role="user", parts=[TextPart(text="Weather?")]),
            Message(
                role="assistant",
                parts=[
                    ReasoningPart(text="need tool", signature="sig"),
                    TextPart(text="Checking."),
                    ToolCallPart(id="toolu_1", name="weather", arguments='{"city":"Paris"}'),
                ],
            ),
            Message(
                role="user",
                parts=[
                    ToolResultPart(
                        tool_call_id="toolu_1",
                        content=(TextPart(text="Sunny"), ImagePart(data="iVBORw0=", media_type="image/png")),
                    ),
                    TextPart(text="And tomorrow?"),
                ],
            ),
        ],
        tools=[ToolSpec(name="weather", description="Get weather", parameters={"type": "object"})],
        tool_choice=ToolChoice(mode="named", name="weather"),
        max_output_tokens=1024,
        stop=["END"],
        stream=True,
        include_usage=True,
        reasoning=ReasoningConfig(budget_tokens=4000),
        source_protocol="anthropic_messages",
        extras={"top_k": 5},
    )
    body = encode_request(req, "gpt-4o")
    assert_valid(body, "CreateChatCompletionRequest")
    assert "top_k" not in body  # another protocol's extras never leak
    assert body["messages"] == [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Be kind."}]},
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {"id": "toolu_1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": "Sunny"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "And tomorrow?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0="}},
            ],
        },
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "weather"}}
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 1024 and body["stop"] == ["END"]
    assert body["reasoning_effort"] == "medium"
