"""Chat Completions request validation: every bad input is a 400 `InvalidParameters` naming the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from modelport.core import FilePart, ImagePart, TextPart
from modelport.core.media import INLINE_MEDIA_MAX_BYTES
from modelport.errors import InvalidParameters
from modelport.protocols.openai_chat import CODEC, decode_request

BASE: dict[str, Any] = {"model": "openai/gpt-4o", "messages": [{"role": "user", "content": "hi"}]}


def user_part(part: dict[str, Any]) -> dict[str, Any]:
    return {**BASE, "messages": [{"role": "user", "content": [part]}]}


def image(url: str) -> dict[str, Any]:
    return user_part({"type": "image_url", "image_url": {"url": url}})


def file(**fields: Any) -> dict[str, Any]:
    return user_part({"type": "file", "file": fields})


def audio(data: str, fmt: str = "wav") -> dict[str, Any]:
    return user_part({"type": "input_audio", "input_audio": {"data": data, "format": fmt}})


HUGE = "A" * (INLINE_MEDIA_MAX_BYTES * 4 // 3 + 8)  # decodes to just over 16 MB

CASES: list[tuple[str, dict[str, Any], str]] = [
    ("no model", {"messages": BASE["messages"]}, "model"),
    ("model not a string", {**BASE, "model": 4}, "model"),
    ("empty model", {**BASE, "model": ""}, "model"),
    ("no messages", {"model": "m"}, "messages"),
    ("messages not a list", {**BASE, "messages": "hi"}, "messages"),
    ("empty messages", {**BASE, "messages": []}, "messages"),
    ("Responses field input", {**BASE, "input": "hi"}, "input"),
    ("Responses field max_output_tokens", {**BASE, "max_output_tokens": 5}, "max_output_tokens"),
    ("Messages field system", {**BASE, "system": "be nice"}, "system"),
    ("message not an object", {**BASE, "messages": ["hi"]}, "messages[0]"),
    ("bad role", {**BASE, "messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
    ("user without content", {**BASE, "messages": [{"role": "user"}]}, "messages[0].content"),
    ("empty content array", {**BASE, "messages": [{"role": "user", "content": []}]}, "messages[0].content"),
    ("unknown part type", user_part({"type": "hologram"}), "messages[0].content[0].type"),
    (
        "video_url does not exist",
        user_part({"type": "video_url", "video_url": {"url": "https://x/v.mp4"}}),
        "messages[0].content[0].type",
    ),
    ("text part without text", user_part({"type": "text"}), "messages[0].content[0].text"),
    ("image without url", user_part({"type": "image_url", "image_url": {}}), "messages[0].content[0].image_url.url"),
    (
        "image bad detail",
        user_part({"type": "image_url", "image_url": {"url": "https://x/a.png", "detail": "max"}}),
        "messages[0].content[0].image_url.detail",
    ),
    ("image provider file id", image("file-abc123"), "messages[0].content[0].image_url.url"),
    ("image data URL not base64", image("data:image/png,rawbytes"), "messages[0].content[0].image_url.url"),
    ("image data URL bad payload", image("data:image/png;base64,@@@"), "messages[0].content[0].image_url.url"),
    ("image inline over 16 MB", image("data:image/png;base64," + HUGE), "messages[0].content[0].image_url.url"),
    ("file provider id", file(file_id="file-abc123"), "messages[0].content[0].file.file_id"),
    ("file without id or data", file(filename="a.pdf"), "messages[0].content[0].file.file_id"),
    (
        "file format not a MIME type",
        file(file_id="https://x/v.mp4", format="mp4"),
        "messages[0].content[0].file.format",
    ),
    (
        "file inline over 16 MB",
        file(file_id="data:video/mp4;base64," + HUGE, format="video/mp4"),
        "messages[0].content[0].file.file_id",
    ),
    ("file_data provider id", file(file_data="file-xyz"), "messages[0].content[0].file.file_data"),
    ("audio bad format", audio("UklGRg==", "flac"), "messages[0].content[0].input_audio.format"),
    ("audio as data URL", audio("data:audio/wav;base64,UklGRg=="), "messages[0].content[0].input_audio.data"),
    ("audio as URL", audio("https://x/a.wav"), "messages[0].content[0].input_audio.data"),
    ("audio not base64", audio("not base64!"), "messages[0].content[0].input_audio.data"),
    ("audio over 16 MB", audio(HUGE), "messages[0].content[0].input_audio.data"),
    ("tool message without id", {**BASE, "messages": [{"role": "tool", "content": "x"}]}, "messages[0].tool_call_id"),
    (
        "tool message bad part",
        {**BASE, "messages": [{"role": "tool", "tool_call_id": "c", "content": [{"type": "image_url"}]}]},
        "messages[0].content[0].type",
    ),
    (
        "assistant call without name",
        {
            **BASE,
            "messages": [
                {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"arguments": "{}"}}]}
            ],
        },
        "messages[0].tool_calls[0].function.name",
    ),
    (
        "assistant call arguments not a string",
        {
            **BASE,
            "messages": [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}}],
                }
            ],
        },
        "messages[0].tool_calls[0].function.arguments",
    ),
    ("empty assistant", {**BASE, "messages": [{"role": "assistant"}]}, "messages[0].content"),
    (
        "system image part",
        {
            **BASE,
            "messages": [{"role": "system", "content": [{"type": "image_url", "image_url": {"url": "https://x"}}]}],
        },
        "messages[0].content[0].type",
    ),
    ("temperature too high", {**BASE, "temperature": 3}, "temperature"),
    ("temperature not a number", {**BASE, "temperature": "hot"}, "temperature"),
    ("top_p above 1", {**BASE, "top_p": 1.5}, "top_p"),
    ("n zero", {**BASE, "n": 0}, "n"),
    ("max_tokens string", {**BASE, "max_tokens": "10"}, "max_tokens"),
    ("max_completion_tokens zero", {**BASE, "max_completion_tokens": 0}, "max_completion_tokens"),
    ("stop too many", {**BASE, "stop": ["a", "b", "c", "d", "e"]}, "stop"),
    ("stop not strings", {**BASE, "stop": [1]}, "stop[0]"),
    ("stream not a bool", {**BASE, "stream": "yes"}, "stream"),
    (
        "include_usage not a bool",
        {**BASE, "stream": True, "stream_options": {"include_usage": 1}},
        "stream_options.include_usage",
    ),
    ("tool without function", {**BASE, "tools": [{"type": "function"}]}, "tools[0].function"),
    (
        "tool without name",
        {**BASE, "tools": [{"type": "function", "function": {"parameters": {}}}]},
        "tools[0].function.name",
    ),
    (
        "tool parameters not an object",
        {**BASE, "tools": [{"type": "function", "function": {"name": "f", "parameters": []}}]},
        "tools[0].function.parameters",
    ),
    ("tool_choice unknown mode", {**BASE, "tool_choice": "any"}, "tool_choice"),
    (
        "tool_choice named without name",
        {**BASE, "tool_choice": {"type": "function", "function": {}}},
        "tool_choice.function.name",
    ),
    ("response_format bad type", {**BASE, "response_format": {"type": "yaml"}}, "response_format.type"),
    (
        "json_schema without name",
        {**BASE, "response_format": {"type": "json_schema", "json_schema": {"schema": {}}}},
        "response_format.json_schema.name",
    ),
    ("metadata value not a string", {**BASE, "metadata": {"k": 1}}, "metadata.k"),
    ("reasoning_effort not a string", {**BASE, "reasoning_effort": 3}, "reasoning_effort"),
]


@pytest.mark.parametrize(("body", "param"), [(b, p) for _, b, p in CASES], ids=[c[0] for c in CASES])
def test_bad_input_names_the_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidParameters) as caught:
        decode_request(copy.deepcopy(body))
    err = caught.value
    assert err.param == param
    assert err.status == 400
    shape = CODEC.error_body(err.text_message, err.error_type, code=err.code, param=err.param)["error"]
    assert shape["type"] == "invalid_request_error" and shape["param"] == param and shape["message"]


def test_base_body_is_valid() -> None:
    # The cases above differ from this body in one field each, so they fail for that field only.
    req = decode_request(copy.deepcopy(BASE))
    assert req.model == "openai/gpt-4o" and req.messages[0].parts == [TextPart(text="hi")]


def test_local_paths_are_ignored_not_rejected() -> None:
    body = {
        **BASE,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "/home/me/cat.png"}},
                    {"type": "file", "file": {"file_id": "C:\\docs\\a.pdf"}},
                    {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
                ],
            }
        ],
    }
    parts = decode_request(body).messages[0].parts
    assert [type(p) for p in parts] == [TextPart, ImagePart]
    assert isinstance(parts[1], ImagePart) and parts[1].url == "https://example.com/cat.png"


def test_inline_media_just_under_the_limit_is_accepted() -> None:
    payload = "A" * (INLINE_MEDIA_MAX_BYTES * 4 // 3)
    req = decode_request(file(file_id=f"data:video/mp4;base64,{payload}", format="video/mp4"))
    [part] = req.messages[0].parts
    assert isinstance(part, FilePart) and part.is_video and part.data == payload


def test_max_completion_tokens_wins_over_max_tokens() -> None:
    req = decode_request({**BASE, "max_tokens": 10, "max_completion_tokens": 20})
    assert req.max_output_tokens == 20
