"""Messages request decoding: validation errors name the right `param`; accepted bodies map onto the
canonical request and keep what has no canonical slot."""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from typing import Any

import pytest

from modelport.core import FilePart, ImagePart, OpaquePart, ReasoningConfig, ReasoningPart, TextPart, ToolChoice
from modelport.core.media import INLINE_MEDIA_MAX_BYTES
from modelport.errors import InvalidParameters, MissingParameter
from modelport.protocols.anthropic_messages import CODEC, decode_request, encode_request

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 32).decode()


def base() -> dict[str, Any]:
    return {"model": "anthropic/claude-sonnet-4-5", "max_tokens": 256, "messages": [{"role": "user", "content": "hi"}]}


def with_block(block: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def apply(body: dict[str, Any]) -> None:
        body["messages"] = [{"role": "user", "content": [block]}]

    return apply


def setter(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(body: dict[str, Any]) -> None:
        body[key] = value

    return apply


def dropper(key: str) -> Callable[[dict[str, Any]], None]:
    def apply(body: dict[str, Any]) -> None:
        body.pop(key)

    return apply


def image(source: dict[str, Any]) -> dict[str, Any]:
    return {"type": "image", "source": source}


_TOO_BIG = "A" * (INLINE_MEDIA_MAX_BYTES // 3 * 4 + 8)

BAD: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("max_tokens missing", dropper("max_tokens"), "max_tokens"),
    ("max_tokens null", setter("max_tokens", None), "max_tokens"),
    ("max_tokens zero", setter("max_tokens", 0), "max_tokens"),
    ("max_tokens string", setter("max_tokens", "10"), "max_tokens"),
    ("model missing", dropper("model"), "model"),
    ("messages missing", dropper("messages"), "messages"),
    ("messages empty", setter("messages", []), "messages"),
    ("developer role", setter("messages", [{"role": "developer", "content": "be nice"}]), "messages[0].role"),
    (
        "system turn without the mid-conversation-system beta",
        setter("messages", [{"role": "user", "content": "a"}, {"role": "system", "content": "b"}]),
        "messages[1].role",
    ),
    ("tool role", setter("messages", [{"role": "tool", "content": "x"}]), "messages[0].role"),
    ("content missing", setter("messages", [{"role": "user"}]), "messages[0].content"),
    ("content number", setter("messages", [{"role": "user", "content": 3}]), "messages[0].content"),
    ("responses input", setter("input", "hello"), "input"),
    ("chat max_completion_tokens", setter("max_completion_tokens", 10), "max_completion_tokens"),
    ("block without type", with_block({"text": "x"}), "messages[0].content[0].type"),
    ("text without text", with_block({"type": "text"}), "messages[0].content[0].text"),
    ("image file source", with_block(image({"type": "file", "file_id": "file_011"})), "messages[0].content[0].source"),
    (
        "image provider file id",
        with_block(image({"type": "url", "url": "file-abc123"})),
        "messages[0].content[0].source.url",
    ),
    (
        "image bad media type",
        with_block(image({"type": "base64", "media_type": "image/bmp", "data": PNG})),
        "messages[0].content[0].source.media_type",
    ),
    (
        "image not base64",
        with_block(image({"type": "base64", "media_type": "image/png", "data": "not base64!"})),
        "messages[0].content[0].source.data",
    ),
    (
        "image over 16 MB",
        with_block(image({"type": "base64", "media_type": "image/png", "data": _TOO_BIG})),
        "messages[0].content[0].source.data",
    ),
    (
        "image data url over 16 MB",
        with_block(image({"type": "url", "url": "data:image/png;base64," + _TOO_BIG})),
        "messages[0].content[0].source.url",
    ),
    ("image unknown source", with_block(image({"type": "s3", "bucket": "x"})), "messages[0].content[0].source.type"),
    (
        "document file source",
        with_block({"type": "document", "source": {"type": "file", "file_id": "file-xyz"}}),
        "messages[0].content[0].source",
    ),
    (
        "document pdf over 16 MB",
        with_block(
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": _TOO_BIG}}
        ),
        "messages[0].content[0].source.data",
    ),
    (
        "tool_use input not an object",
        with_block({"type": "tool_use", "id": "toolu_1", "name": "f", "input": "x"}),
        "messages[0].content[0].input",
    ),
    (
        "tool_result without id",
        with_block({"type": "tool_result", "content": "x"}),
        "messages[0].content[0].tool_use_id",
    ),
    (
        "tool_result image file id",
        with_block(
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [image({"type": "url", "url": "file-9"})]}
        ),
        "messages[0].content[0].content[0].source.url",
    ),
    (
        "tool_result document file id",
        with_block(
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [{"type": "document", "source": {"type": "file", "file_id": "f"}}],
            }
        ),
        "messages[0].content[0].content[0].source",
    ),
    (
        "container_upload file id",
        with_block({"type": "container_upload", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"}),
        "messages[0].content[0].file_id",
    ),
    (
        "future block with a file source",
        with_block({"type": "some_future_block", "source": {"type": "file", "file_id": "f"}}),
        "messages[0].content[0].source",
    ),
    (
        "content document with a file image",
        with_block(
            {
                "type": "document",
                "source": {"type": "content", "content": [image({"type": "file", "file_id": "f"})]},
            }
        ),
        "messages[0].content[0].source.content[0].source",
    ),
    ("thinking without text", with_block({"type": "thinking", "signature": "s"}), "messages[0].content[0].thinking"),
    ("redacted without data", with_block({"type": "redacted_thinking"}), "messages[0].content[0].data"),
    ("system number", setter("system", 5), "system"),
    ("system image block", setter("system", [image({"type": "url", "url": "https://x"})]), "system[0].type"),
    ("temperature above 1", setter("temperature", 1.5), "temperature"),
    ("top_p string", setter("top_p", "high"), "top_p"),
    ("top_k negative", setter("top_k", -1), "top_k"),
    ("stop_sequences not a list", setter("stop_sequences", "END"), "stop_sequences"),
    ("stop_sequences number", setter("stop_sequences", ["a", 1]), "stop_sequences[1]"),
    ("stream string", setter("stream", "yes"), "stream"),
    ("metadata user_id number", setter("metadata", {"user_id": 7}), "metadata.user_id"),
    ("tools not a list", setter("tools", {"name": "f"}), "tools"),
    ("tool without schema", setter("tools", [{"name": "f"}]), "tools[0].input_schema"),
    ("tool without name", setter("tools", [{"input_schema": {"type": "object"}}]), "tools[0].name"),
    ("tool_choice unknown", setter("tool_choice", {"type": "required"}), "tool_choice.type"),
    ("tool_choice tool without name", setter("tool_choice", {"type": "tool"}), "tool_choice.name"),
    ("tool_choice string", setter("tool_choice", "auto"), "tool_choice"),
    (
        "disable_parallel not bool",
        setter("tool_choice", {"type": "auto", "disable_parallel_tool_use": "yes"}),
        "tool_choice.disable_parallel_tool_use",
    ),
    ("thinking without budget", setter("thinking", {"type": "enabled"}), "thinking.budget_tokens"),
    (
        "thinking budget too small",
        setter("thinking", {"type": "enabled", "budget_tokens": 100}),
        "thinking.budget_tokens",
    ),
    ("thinking without type", setter("thinking", {"budget_tokens": 2048}), "thinking.type"),
]


@pytest.mark.parametrize(("mutate", "param"), [(m, p) for _, m, p in BAD], ids=[name for name, _, _ in BAD])
def test_invalid_request_is_a_400_naming_the_field(mutate: Callable[[dict[str, Any]], None], param: str) -> None:
    body = base()
    mutate(body)
    with pytest.raises(InvalidParameters) as caught:
        decode_request(body)
    err = caught.value
    assert err.param == param
    assert err.status == 400
    shape = CODEC.error_body(err.text_message, err.error_type, code=err.code, param=err.param)
    assert shape == {
        "type": "error",
        "error": {"message": err.text_message, "type": "invalid_request_error", "param": param},
    }


def test_missing_max_tokens_is_a_missing_parameter() -> None:
    body = base()
    del body["max_tokens"]
    with pytest.raises(MissingParameter, match="max_tokens"):
        decode_request(body)


def test_role_error_lists_the_roles_messages_takes() -> None:
    body = base()
    body["messages"] = [{"role": "developer", "content": "x"}]
    with pytest.raises(InvalidParameters, match="Input should be 'user' or 'assistant'"):
        decode_request(body)


def test_a_system_turn_under_the_beta_takes_text_only() -> None:
    body = base()
    body["messages"] = [
        {"role": "user", "content": "a"},
        {"role": "system", "content": [image({"type": "url", "url": "https://x"})]},
    ]
    with pytest.raises(InvalidParameters) as caught:
        decode_request(body, system_turns=True)
    assert caught.value.param == "messages[1].content[0].type"


def test_valid_body_maps_onto_the_canonical_request() -> None:
    body = base()
    body.update(
        {
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Look:"},
                        image({"type": "url", "url": "https://example.com/a.png"}),
                        image({"type": "base64", "media_type": "image/png", "data": PNG}),
                        image({"type": "url", "url": f"data:image/png;base64,{PNG}"}),
                        image({"type": "url", "url": "/home/me/cat.png"}),
                        {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
                        {
                            "type": "document",
                            "title": "notes",
                            "source": {"type": "text", "media_type": "text/plain", "data": "héllo"},
                        },
                    ],
                },
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                        {"type": "redacted_thinking", "data": "opaque"},
                        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"q": 1}},
                        {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}},
                    ],
                },
            ],
            "stop_sequences": ["END"],
            "temperature": 0.5,
            "top_p": 0.9,
            "top_k": 40,
            "metadata": {"user_id": "user-1234"},
            "tools": [
                {
                    "name": "lookup",
                    "description": "d",
                    "input_schema": {"type": "object"},
                    "cache_control": {"type": "ephemeral"},
                },
                {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
            ],
            "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "stream": True,
            "service_tier": "auto",
            "some_future_field": {"x": 1},
        }
    )
    original = copy.deepcopy(body)
    req = decode_request(body)
    assert body == original
    assert req.system == [TextPart(text="Be brief.")]
    assert req.system[0].extras == {"cache_control": {"type": "ephemeral"}}
    user, assistant = req.messages
    assert user.parts == [
        TextPart(text="Look:"),
        ImagePart(url="https://example.com/a.png"),
        ImagePart(data=PNG, media_type="image/png"),
        ImagePart(data=PNG, media_type="image/png"),  # a data: URL becomes inline data
        # the local filesystem path is ignored, as the interface says
        FilePart(url="https://example.com/a.pdf"),
        FilePart(data=base64.b64encode("héllo".encode()).decode(), media_type="text/plain", filename="notes"),
    ]
    assert assistant.parts[0] == ReasoningPart(text="hmm", signature="sig")
    assert assistant.parts[1] == ReasoningPart(redacted="opaque")
    assert isinstance(assistant.parts[2], OpaquePart) and assistant.parts[2].data["type"] == "server_tool_use"
    assert (req.max_output_tokens, req.stop, req.temperature, req.top_p) == (256, ["END"], 0.5, 0.9)
    assert req.user == "user-1234" and req.stream is True
    assert [t.name for t in req.tools] == ["lookup"]
    assert req.tool_choice == ToolChoice(mode="required") and req.parallel_tool_calls is False
    assert req.reasoning == ReasoningConfig(budget_tokens=2048)
    for key in ("top_k", "service_tier", "some_future_field", "metadata", "thinking"):
        assert req.extras[key] == original[key]
    # Same protocol: everything comes back, server tool in its place.
    again = encode_request(req, "claude-sonnet-4-5-20250929")
    expected = {**original, "model": "claude-sonnet-4-5-20250929"}
    expected["messages"][0]["content"].pop(4)  # the ignored local-path image
    # A data: URL is not a URL the API can fetch: it goes upstream as the base64 source it stands for.
    expected["messages"][0]["content"][3] = image({"type": "base64", "media_type": "image/png", "data": PNG})
    assert again == expected


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, ToolChoice(mode="auto")),
        ({"type": "any"}, ToolChoice(mode="required")),
        ({"type": "none"}, ToolChoice(mode="none")),
        ({"type": "tool", "name": "f"}, ToolChoice(mode="named", name="f")),
    ],
)
def test_tool_choice_modes(choice: dict[str, Any], expected: ToolChoice) -> None:
    body = base()
    body["tools"] = [{"name": "f", "input_schema": {"type": "object"}}]
    body["tool_choice"] = choice
    req = decode_request(body)
    assert req.tool_choice == expected and req.parallel_tool_calls is None
    assert encode_request(req, "m")["tool_choice"] == choice


@pytest.mark.parametrize(
    ("thinking", "expected"),
    [
        ({"type": "enabled", "budget_tokens": 1024}, ReasoningConfig(budget_tokens=1024)),
        ({"type": "disabled"}, ReasoningConfig(enabled=False)),
        ({"type": "adaptive"}, ReasoningConfig()),
    ],
)
def test_thinking_modes(thinking: dict[str, Any], expected: ReasoningConfig) -> None:
    body = {**base(), "thinking": thinking}
    assert decode_request(body).reasoning == expected


def test_tool_result_content_forms() -> None:
    body = base()
    body["messages"] = [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "15 degrees", "is_error": False},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "is_error": True,
                    "content": [
                        {"type": "text", "text": "no"},
                        image({"type": "base64", "media_type": "image/png", "data": PNG}),
                    ],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_3",
                    "content": [{"type": "search_result", "source": "s", "title": "t", "content": []}],
                },
                {"type": "tool_result", "tool_use_id": "toolu_4"},
            ],
        }
    ]
    req = decode_request(copy.deepcopy(body))
    first, second, third, fourth = req.messages[0].parts
    assert (first.content, first.is_error) == ("15 degrees", False)  # type: ignore[union-attr]
    assert second.content == (TextPart(text="no"), ImagePart(data=PNG, media_type="image/png"))  # type: ignore[union-attr]
    assert second.is_error is True  # type: ignore[union-attr]
    assert third.content == ()  # type: ignore[union-attr]  # a search result has no canonical form
    assert fourth.content == ""  # type: ignore[union-attr]
    # ...but an Anthropic upstream still gets the blocks.
    out = encode_request(req, "m")["messages"][0]["content"]
    assert out[:3] == body["messages"][0]["content"][:3]
