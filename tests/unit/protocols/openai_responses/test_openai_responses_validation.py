"""Responses request validation: each bad request is a 400 ``invalid_request_error`` naming the field."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from modelport.core import FilePart, ImagePart, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from modelport.errors import InvalidParameters
from modelport.protocols.openai_responses import CODEC


def _body(**fields: Any) -> dict[str, Any]:
    return {"model": "openai/gpt-4o", "input": "hi", **fields}


def _user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(parts)}


def _param(body: dict[str, Any]) -> str | None:
    with pytest.raises(InvalidParameters) as caught:
        CODEC.decode_request(body)
    error = caught.value
    assert error.status == 400
    assert error.error_type == "invalid_request_error"
    return error.param


BIG = "A" * (16 * 1024 * 1024 // 3 * 4 + 8)  # decodes to just over 16 MB


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "openai/gpt-4o", "messages": [{"role": "user", "content": "hi"}]}, "messages"),
        (_body(max_tokens=10), "max_tokens"),
        ({"model": "openai/gpt-4o"}, "input"),
        ({"input": "hi"}, "model"),
        (_body(model=""), "model"),
        (_body(input=[]), "input"),
        (_body(input=7), "input"),
        (_body(input=["hi"]), "input[0]"),
        (_body(input=[{"role": "tool", "content": "x"}]), "input[0].role"),
        (_body(input=[{"role": "user"}]), "input[0].content"),
        (_body(input=[{"type": "bogus"}]), "input[0].type"),
        (
            _body(input=[_user({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}})]),
            "input[0].content[0].type",
        ),
        (
            _body(input=[_user({"type": "image_url", "image_url": {"url": "https://x/y.png"}})]),
            "input[0].content[0].type",
        ),
        (_body(input=[_user({"type": "input_text"})]), "input[0].content[0].text"),
        (_body(input=[_user({"type": "input_image", "file_id": "file-abc"})]), "input[0].content[0].file_id"),
        (_body(input=[_user({"type": "input_image", "image_url": "file-abc"})]), "input[0].content[0].image_url"),
        (_body(input=[_user({"type": "input_image"})]), "input[0].content[0].image_url"),
        (
            _body(input=[_user({"type": "input_image", "image_url": "data:image/png;base64,@@@"})]),
            "input[0].content[0].image_url",
        ),
        (
            _body(input=[_user({"type": "input_image", "image_url": "data:image/png;base64," + BIG})]),
            "input[0].content[0].image_url",
        ),
        (
            _body(input=[_user({"type": "input_image", "image_url": "https://x/y.png", "detail": "max"})]),
            "input[0].content[0].detail",
        ),
        (_body(input=[_user({"type": "input_file", "file_id": "file-abc"})]), "input[0].content[0].file_id"),
        (
            _body(input=[_user({"type": "input_file", "file_data": "data:application/pdf;base64," + BIG})]),
            "input[0].content[0].file_data",
        ),
        (_body(input=[_user({"type": "input_file", "filename": "a.pdf"})]), "input[0].content[0].file_url"),
        (_body(input=[_user({"type": "input_file", "file_url": "file-abc"})]), "input[0].content[0].file_url"),
        (
            _body(input=[{"role": "system", "content": [{"type": "input_image", "image_url": "https://x"}]}]),
            "input[0].content[0].type",
        ),
        (
            _body(input=[{"role": "assistant", "content": [{"type": "input_image", "image_url": "https://x"}]}]),
            "input[0].content[0].type",
        ),
        (_body(input=[{"type": "function_call", "name": "f", "arguments": "{}"}]), "input[0].call_id"),
        (_body(input=[{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}]), "input[0].arguments"),
        (_body(input=[{"type": "function_call_output", "call_id": "c"}]), "input[0].output"),
        (
            _body(
                input=[
                    {
                        "type": "function_call_output",
                        "call_id": "c",
                        "output": [{"type": "input_file", "file_url": "https://x/a.pdf"}],
                    }
                ]
            ),
            "input[0].output[0].type",
        ),
        (
            _body(input=[{"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text"}]}]),
            "input[0].summary[0].text",
        ),
        (_body(instructions=3), "instructions"),
        (_body(max_output_tokens=15), "max_output_tokens"),
        (_body(max_output_tokens="10"), "max_output_tokens"),
        (_body(temperature=2.5), "temperature"),
        (_body(top_p=-0.1), "top_p"),
        (_body(stream="yes"), "stream"),
        (_body(metadata={"k": 1}), "metadata.k"),
        (_body(tools=[{"type": "function"}]), "tools[0].name"),
        (_body(tools=[{"type": "function", "name": "f", "parameters": []}]), "tools[0].parameters"),
        (_body(tools=[{"name": "f"}]), "tools[0].type"),
        (_body(tool_choice="any"), "tool_choice"),
        (_body(tool_choice={"type": "function"}), "tool_choice.name"),
        (_body(tool_choice={"type": "nope"}), "tool_choice.type"),
        (_body(text={"format": {"type": "json_schema", "schema": {}}}), "text.format.name"),
        (_body(text={"format": {"type": "json_schema", "name": "x"}}), "text.format.schema"),
        (_body(text={"format": {"type": "yaml"}}), "text.format.type"),
        (_body(reasoning={"effort": 1}), "reasoning.effort"),
    ],
)
def test_bad_request_names_the_field(body: dict[str, Any], param: str) -> None:
    assert _param(body) == param


def test_string_input_is_one_user_message() -> None:
    req = CODEC.decode_request(_body(input="hello", instructions="Be terse."))
    assert [(m.role, m.parts) for m in req.messages] == [("user", [TextPart(text="hello")])]
    assert req.system_text == "Be terse."
    assert req.include_usage is True


def test_media_parts_decode_to_canonical_parts() -> None:
    pdf = base64.b64encode(b"%PDF-1.4").decode()
    req = CODEC.decode_request(
        _body(
            input=[
                _user(
                    {"type": "input_text", "text": "look"},
                    {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/", "detail": "low"},
                    {"type": "input_file", "file_url": "https://files.example/a.mp4"},
                    {"type": "input_file", "file_data": f"data:application/pdf;base64,{pdf}", "filename": "a.pdf"},
                    {"type": "input_image", "image_url": "/etc/passwd"},  # a local path: ignored
                )
            ]
        )
    )
    assert req.messages[0].parts == [
        TextPart(text="look"),
        ImagePart(data="/9j/", media_type="image/jpeg", detail="low"),
        FilePart(url="https://files.example/a.mp4"),
        FilePart(data=pdf, media_type="application/pdf", filename="a.pdf"),
    ]


def test_model_turn_items_form_one_assistant_message() -> None:
    req = CODEC.decode_request(
        _body(
            input=[
                {"role": "user", "content": "q"},
                {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "a"}]},
                {"role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "1"},
                {"type": "function_call_output", "call_id": "c2", "output": "2"},
            ]
        )
    )
    assert [m.role for m in req.messages] == ["user", "assistant", "tool", "tool"]
    kinds = [type(p) for p in req.messages[1].parts]
    assert kinds == [ReasoningPart, TextPart, ToolCallPart, ToolCallPart]
    assert [p.tool_call_id for m in req.messages[2:] for p in m.parts if isinstance(p, ToolResultPart)] == ["c1", "c2"]


def test_unknown_fields_and_previous_response_id_are_kept() -> None:
    body = _body(previous_response_id="resp_1", store=False, include=["reasoning.encrypted_content"], foo={"a": 1})
    req = CODEC.decode_request(body)
    assert req.extras["previous_response_id"] == "resp_1"
    assert req.extras["foo"] == {"a": 1}
    out = CODEC.encode_request(req, "gpt-4o")
    assert {k: out[k] for k in ("previous_response_id", "store", "include", "foo")} == {
        k: body[k] for k in ("previous_response_id", "store", "include", "foo")
    }


def test_system_developer_and_hosted_items_keep_their_place() -> None:
    items = [
        {"role": "assistant", "content": "earlier"},
        {"role": "developer", "content": "between two model turns"},
        {"role": "assistant", "content": "again"},
        {"role": "developer", "content": "rules"},
        {"role": "user", "content": "q"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}},
        {"role": "system", "content": [{"type": "input_text", "text": "more"}, {"type": "input_text", "text": "!"}]},
        {"role": "assistant", "content": "a"},
        {"type": "item_reference", "id": "msg_9"},
    ]
    req = CODEC.decode_request(_body(input=items, instructions="top"))
    assert req.system_text == "top\n\nbetween two model turns\n\nrules\n\nmore\n\n!"
    assert [m.role for m in req.messages] == ["assistant", "assistant", "user", "assistant"]
    assert CODEC.encode_request(req, "gpt-4o")["input"] == items
