"""Responses requests: every recorded request body decodes, and re-encodes to the same body.

JSON ``null`` and an absent key mean the same to the API (pydantic-ai sends ``description: null``), so the
round trip is compared with nulls dropped. Requests from another protocol are encoded too and checked
against the published ``CreateResponse`` schema.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelport.core import (
    CanonicalRequest,
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from modelport.errors import InvalidParameters
from modelport.protocols.openai_responses import CODEC
from tests.support.cassettes import Interaction, interactions
from tests.support.openapi_schema import assert_valid

REQUESTS = interactions("openai_responses", path="/v1/responses")


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _valid_requests() -> list[Interaction]:
    # The one request the API refused for a field value (temperature -1) is covered below.
    return [it for it in REQUESTS if not (it.status == 400 and (it.response_json or {})["error"]["param"] != "model")]


def test_recordings_cover_requests() -> None:
    assert len(_valid_requests()) >= 20


@pytest.mark.parametrize("it", _valid_requests(), ids=lambda it: it.id)
def test_request_round_trip(it: Interaction) -> None:
    body = it.request_json
    req = CODEC.decode_request(body)
    assert req.model == body["model"]
    assert req.source_protocol == "openai_responses"
    assert _without_nulls(CODEC.encode_request(req, body["model"])) == _without_nulls(body)


@pytest.mark.parametrize("it", _valid_requests(), ids=lambda it: it.id)
def test_request_decodes_canonical_facts(it: Interaction) -> None:
    """Messages, tool calls and results, and settings land in their canonical slots."""
    body = it.request_json
    req = CODEC.decode_request(body)
    items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
    calls = [(i["call_id"], i["name"], i["arguments"]) for i in items if i.get("type") == "function_call"]
    outputs = [(i["call_id"], i["output"]) for i in items if i.get("type") == "function_call_output"]
    users = [i for i in items if i.get("role") == "user"]
    parts = [p for m in req.messages for p in m.parts]
    assert [(p.id, p.name, p.arguments) for p in parts if isinstance(p, ToolCallPart)] == calls
    assert [(p.tool_call_id, p.content) for p in parts if isinstance(p, ToolResultPart)] == outputs
    assert len([m for m in req.messages if m.role == "user"]) == len(users)
    reasoning = [i for i in items if i.get("type") == "reasoning"]
    assert [(p.id, p.encrypted_content) for p in parts if isinstance(p, ReasoningPart)] == [
        (i.get("id"), i.get("encrypted_content")) for i in reasoning
    ]
    assert req.system_text == (body.get("instructions") or "")
    assert req.stream is bool(body.get("stream"))
    assert [t.name for t in req.tools] == [t["name"] for t in body.get("tools", []) if t["type"] == "function"]
    if body.get("reasoning", {}).get("effort"):
        assert req.reasoning is not None and req.reasoning.effort == body["reasoning"]["effort"]
    fmt = (body.get("text") or {}).get("format") or {}
    if fmt.get("type") == "json_schema":
        assert req.response_format is not None
        assert (req.response_format.name, req.response_format.schema) == (fmt["name"], fmt["schema"])
    if "previous_response_id" in body:
        assert req.extras["previous_response_id"] == body["previous_response_id"]


def test_image_part_decodes_as_url() -> None:
    it = next(it for it in REQUESTS if it.cassette == "test_openai_responses_image_url_input")
    req = CODEC.decode_request(it.request_json)
    image = req.messages[0].parts[1]
    assert isinstance(image, ImagePart)
    assert image.url == it.request_json["input"][0]["content"][1]["image_url"]
    assert image.detail == "auto"


def test_recorded_field_error_is_reproduced() -> None:
    """The API refused ``temperature: -1`` naming ``temperature``; so does the decoder."""
    it = next(it for it in REQUESTS if it.cassette == "test_openai_responses_model_http_error")
    recorded = it.response_json["error"]
    with pytest.raises(InvalidParameters) as caught:
        CODEC.decode_request(it.request_json)
    assert caught.value.status == it.status
    assert caught.value.param == recorded["param"]
    assert caught.value.error_type == recorded["type"]


def _chat_style_request() -> CanonicalRequest:
    """What a Chat or Messages client's request looks like in canonical form."""
    return CanonicalRequest(
        model="openai/gpt-4o",
        system=[TextPart(text="Be brief.")],
        messages=[
            Message(
                role="user",
                parts=[TextPart(text="Weather?"), ImagePart(data="aGVsbG8=", media_type="image/png")],
            ),
            Message(
                role="assistant",
                parts=[
                    ReasoningPart(text="thinking", signature="sig"),  # Anthropic reasoning: not replayable
                    TextPart(text="Let me check."),
                    ToolCallPart(id="call_1", name="get_weather", arguments='{"city":"Paris"}'),
                ],
            ),
            Message(role="user", parts=[ToolResultPart(tool_call_id="call_1", content="sunny")]),
        ],
        max_output_tokens=8,
        stop=["END"],
        source_protocol="openai_chat",
        extras={"stop": "END", "_array": True},
    )


# Schemas of the input items we write. The spec's `InputItem` is a `oneOf` that only its discriminator
# makes unambiguous (a user message matches both `EasyInputMessage` and `InputMessage`), and JSON Schema
# validators ignore discriminators, so each item is checked against its own member schema.
_ITEM_SCHEMAS = {
    "message": "EasyInputMessage",
    "function_call": "FunctionToolCall",
    "function_call_output": "FunctionCallOutputItemParam",
    "reasoning": "ReasoningItem",
}


def assert_valid_create_response(body: dict[str, Any]) -> None:
    assert_valid({**body, "input": "-"}, "CreateResponse")
    for item in body["input"]:
        assert_valid(item, _ITEM_SCHEMAS[item.get("type", "message")])


def test_foreign_request_encodes_to_valid_create_response() -> None:
    body = CODEC.encode_request(_chat_style_request(), "gpt-4o")
    assert_valid_create_response(body)
    assert body["instructions"] == "Be brief."
    assert "stop" not in body  # another protocol's extras never leak
    assert body["max_output_tokens"] == 16  # raised to the Responses minimum
    assert [i.get("type", "message") for i in body["input"]] == [
        "message",
        "message",
        "function_call",
        "function_call_output",
    ]
    assert body["input"][0]["content"][1] == {
        "type": "input_image",
        "image_url": "data:image/png;base64,aGVsbG8=",
        "detail": "auto",
    }
    assert body["input"][1] == {"role": "assistant", "content": "Let me check."}
    assert body["input"][2] == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": '{"city":"Paris"}',
    }
    assert body["input"][3] == {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}
