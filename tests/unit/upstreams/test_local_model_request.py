"""Validation and mapping of Chat Completions bodies for the embedded model (no model needed)."""

from __future__ import annotations

from typing import Any

import pytest

from modelport.errors import InvalidParameters
from modelport.upstreams.local_request import DEFAULT_TEMPERATURE, parse_request

USER = [{"role": "user", "content": "hi"}]


def parse(**body: Any) -> Any:
    return parse_request({"messages": USER, **body}, default_max_tokens=99)


def test_messages_are_flattened_to_template_roles() -> None:
    req = parse_request(
        {
            "messages": [
                {"role": "developer", "content": "be nice"},
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function"}]},
                {"role": "tool", "tool_call_id": "c", "content": "42"},
            ]
        },
        default_max_tokens=10,
    )
    assert req.messages == [
        {"role": "system", "content": "be nice"},
        {"role": "user", "content": "a\nb"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "42"},
    ]


def test_sampling_settings_are_mapped() -> None:
    req = parse(max_completion_tokens=7, max_tokens=3, temperature=0, top_p=0.5, stop="END", seed=4)
    assert req.params["max_tokens"] == 7  # max_completion_tokens wins, as in OpenAI's API
    assert req.params["temperature"] == 0.0 and req.params["top_p"] == 0.5
    assert req.params["stop"] == ["END"] and req.params["seed"] == 4
    assert not req.include_usage


def test_defaults() -> None:
    req = parse(stream_options={"include_usage": True}, tools=[{"type": "function"}], tool_choice="auto")
    assert req.params["max_tokens"] == 99
    assert req.params["temperature"] == DEFAULT_TEMPERATURE
    assert "stop" not in req.params and "seed" not in req.params
    assert req.include_usage


def test_response_format_json_schema_becomes_a_schema_grammar() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    req = parse(response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}})
    assert req.params["response_format"] == {"type": "json_object", "schema": schema}
    assert "response_format" not in parse(response_format={"type": "text"}).params


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"n": 3}, "n"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tool_choice": {"type": "function", "function": {"name": "f"}}}, "tool_choice"),
        ({"function_call": {"name": "f"}}, "function_call"),
        ({"audio": {"voice": "alloy", "format": "wav"}}, "audio"),
        ({"modalities": ["text", "audio"]}, "modalities"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_completion_tokens": "5"}, "max_completion_tokens"),
        ({"temperature": 3}, "temperature"),
        ({"top_p": True}, "top_p"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
        ({"seed": 1.5}, "seed"),
        ({"response_format": {"type": "xml"}}, "response_format"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "x"}, {"type": "image_url", "image_url": {"url": "u"}}],
                    }
                ]
            },
            "messages[0].content[1]",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}]},
            "messages[0].content[0]",
        ),
        ({"messages": [{"role": "user", "content": [{"type": "file", "file": {}}]}]}, "messages[0].content[0]"),
    ],
)
def test_rejected_fields_are_named(body: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidParameters) as info:
        parse_request({"messages": USER, **body}, default_max_tokens=10)
    assert info.value.param == param
    assert info.value.status == 400
    assert info.value.error_type == "invalid_request_error"


def test_ignored_fields_do_not_fail() -> None:
    req = parse(
        tools=[{"type": "function", "function": {"name": "f"}}],
        tool_choice="none",
        logprobs=True,
        top_logprobs=2,
        logit_bias={"1": 2},
        user="u",
        metadata={"a": "b"},
        store=False,
        parallel_tool_calls=True,
        n=1,
    )
    assert req.messages == USER
