"""Messages requests: every recorded request body survives decode → canonical → encode.

Three checks per recorded request:
- same protocol (Messages client → Anthropic upstream): the encoded body equals the recorded one
  exactly, except `model`, which the gateway replaces with the upstream's name;
- canonical only (as when the request came from another protocol: shape hints and extras are not
  available to the encoder): decoding that encoding gives back the same canonical request, minus the
  documented losses (unknown top-level fields and block fields such as ``cache_control``; system
  blocks join into one string);
- both encodings are shaped as the `anthropic` SDK's request types say (each content block, tool,
  tool choice and thinking config validates against the SDK's TypedDicts).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from anthropic.types import (
    ContentBlockParam,
    TextBlockParam,
    ThinkingConfigParam,
    ToolChoiceParam,
    ToolUnionParam,
)
from pydantic import TypeAdapter

from modelport.core import CanonicalRequest, Message, OpaquePart
from modelport.protocols.anthropic_messages import decode_request, encode_request
from tests.support.cassettes import Interaction, interactions

MESSAGES = interactions("anthropic_messages", path="/v1/messages")

_BLOCK = TypeAdapter(ContentBlockParam)
_SYSTEM_BLOCK = TypeAdapter(TextBlockParam)
_TOOL = TypeAdapter(ToolUnionParam)
_TOOL_CHOICE = TypeAdapter(ToolChoiceParam)
_THINKING = TypeAdapter(ThinkingConfigParam)


def assert_sdk_request_shape(body: dict[str, Any]) -> None:
    """The body as the SDK's request types describe it. (The SDK types `messages` as a lazily
    validated Iterable, so messages and blocks are checked one by one.)"""
    assert isinstance(body["model"], str)
    assert isinstance(body["max_tokens"], int) and body["max_tokens"] >= 1
    assert body["messages"], "Messages rejects an empty message list"
    for msg in body["messages"]:
        assert msg["role"] in ("user", "assistant")
        if isinstance(msg["content"], list):
            assert msg["content"], "Messages rejects empty content"
            for block in msg["content"]:
                _BLOCK.validate_python(block)
        else:
            assert isinstance(msg["content"], str)
    system = body.get("system")
    if isinstance(system, list):
        for block in system:
            _SYSTEM_BLOCK.validate_python(block)
    else:
        assert system is None or isinstance(system, str)
    for tool in body.get("tools", []):
        _TOOL.validate_python(tool)
    if "tool_choice" in body:
        _TOOL_CHOICE.validate_python(body["tool_choice"])
    if "thinking" in body:
        _THINKING.validate_python(body["thinking"])


def as_foreign(req: CanonicalRequest) -> CanonicalRequest:
    """The same request as if a client of another protocol had sent it."""
    foreign = copy.copy(req)
    foreign.source_protocol = "openai_chat"
    return foreign


def test_every_messages_cassette_has_requests() -> None:
    assert len(MESSAGES) >= 20


def test_sdk_shape_check_rejects_a_bad_block() -> None:
    # Guards the helper: a check that accepts everything would prove nothing.
    bad = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image"}]}]}
    with pytest.raises(ValueError):
        assert_sdk_request_shape(bad)


@pytest.mark.parametrize("it", MESSAGES, ids=lambda it: it.id)
def test_same_protocol_round_trip_is_exact(it: Interaction) -> None:
    original = copy.deepcopy(it.request_json)
    req = decode_request(it.request_json)
    assert it.request_json == original, "decoding must not mutate the client's body"
    body = encode_request(req, "claude-upstream")
    assert body.pop("model") == "claude-upstream"
    expected = dict(original)
    expected.pop("model")
    assert body == expected
    assert_sdk_request_shape({"model": "claude-upstream", **body})


def _canonical_facts(req: CanonicalRequest) -> dict[str, Any]:
    """What a request of another protocol can carry into Messages (parts compare without extras)."""

    def parts(msg: Message) -> list[Any]:
        return [p for p in msg.parts if not isinstance(p, OpaquePart)]

    return {
        "messages": [(m.role, parts(m)) for m in req.messages if parts(m)],
        "system": req.system_text,
        "tools": req.tools,
        "tool_choice": req.tool_choice,
        "parallel": req.parallel_tool_calls,
        "max": req.max_output_tokens,
        "stop": req.stop,
        "sampling": (req.temperature, req.top_p),
        "reasoning": req.reasoning,
        "user": req.user,
        "stream": req.stream,
    }


@pytest.mark.parametrize("it", MESSAGES, ids=lambda it: it.id)
def test_canonical_round_trip_keeps_every_fact(it: Interaction) -> None:
    req = decode_request(copy.deepcopy(it.request_json))
    body = encode_request(as_foreign(req), "claude-upstream")
    assert_sdk_request_shape(body)
    again = decode_request(body)
    assert _canonical_facts(again) == _canonical_facts(req)
    # Extras are hints for the source protocol only; opaque parts are re-emitted by the codec of the
    # protocol that made them (here Messages itself), whoever sent the request.
    assert "cache_control" not in again.extras
    assert _opaque(again) == _opaque(req)


def _opaque(req: CanonicalRequest) -> list[OpaquePart]:
    return [p for m in req.messages for p in m.parts if isinstance(p, OpaquePart)]


def test_cassettes_cover_the_request_features() -> None:
    """The recorded requests exercise what the round trips above claim to cover."""
    seen: set[str] = set()
    for it in MESSAGES:
        body = it.request_json
        seen.update(
            k for k in ("system", "tools", "tool_choice", "thinking", "stop_sequences", "cache_control") if k in body
        )
        for msg in body["messages"]:
            if isinstance(msg["content"], list):
                seen.update(f"block:{b['type']}" for b in msg["content"])
    for needed in (
        "system",
        "tools",
        "tool_choice",
        "thinking",
        "stop_sequences",
        "cache_control",
        "block:image",
        "block:tool_use",
        "block:tool_result",
        "block:thinking",
        "block:server_tool_use",
    ):
        assert needed in seen
