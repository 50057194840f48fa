"""Reasoning survives a round trip through a client of the other protocol (issue 8, defect 3).

Turn 1: the upstream's answer is decoded and encoded for the client. Turn 2: the client sends that answer
back as history (exactly as received), and the request the upstream gets must carry the upstream's own
token (Anthropic signature, OpenAI item id + encrypted content) unchanged.
"""

from __future__ import annotations

from typing import Any

from modelport.core import (
    CanonicalRequest,
    Message,
    ReasoningConfig,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from modelport.protocols import get_codec
from modelport.protocols.reasoning_carry import unwrap_anthropic, unwrap_openai, wrap_anthropic, wrap_openai

MESSAGES = get_codec("anthropic_messages")
RESPONSES = get_codec("openai_responses")
CHAT = get_codec("openai_chat")


def test_wrapping_round_trips_and_ignores_foreign_tokens() -> None:
    openai = unwrap_openai(wrap_openai("rs_1", "gAAAA=="))
    assert openai is not None and (openai.id, openai.encrypted_content) == ("rs_1", "gAAAA==")
    anthropic = unwrap_anthropic(wrap_anthropic("ünïcode thought", "EqQBCk...", None))
    assert anthropic is not None and (anthropic.text, anthropic.signature) == ("ünïcode thought", "EqQBCk...")
    redacted = unwrap_anthropic(wrap_anthropic("", None, "blob"))
    assert redacted is not None and redacted.redacted == "blob"
    assert wrap_anthropic("unsigned", None, None) is None and wrap_openai(None, None) is None
    # A vendor's own tokens (and junk after our prefix) are not ours.
    assert unwrap_openai("EqQBCkYIBxgCKkB") is None and unwrap_anthropic("gAAAAABo") is None
    assert unwrap_openai("mpr1.%%%") is None and unwrap_anthropic("mpa1.e30") is None


def _responses_upstream_answer() -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "gpt-5",
        "output": [
            {
                "id": "rs_abc",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "Need the weather."}],
                "encrypted_content": "gAAAA-opaque",
            },
            {
                "id": "fc_1",
                "type": "function_call",
                "status": "completed",
                "call_id": "call_1",
                "name": "weather",
                "arguments": "{}",
            },
        ],
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def test_openai_reasoning_reaches_a_messages_client_and_goes_back_to_the_responses_upstream() -> None:
    answer = MESSAGES.encode_response(RESPONSES.decode_response(_responses_upstream_answer()), "m")
    thinking = answer["content"][0]
    assert thinking["type"] == "thinking" and thinking["thinking"] == "Need the weather."
    assert thinking["signature"].startswith("mpr1.")
    turn2 = {
        "model": "m",
        "max_tokens": 4096,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": answer["content"]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"}]},
        ],
    }
    upstream = RESPONSES.encode_request(MESSAGES.decode_request(turn2), "gpt-5")
    reasoning = [i for i in upstream["input"] if i.get("type") == "reasoning"]
    assert reasoning == [
        {
            "type": "reasoning",
            "id": "rs_abc",
            "summary": [{"type": "summary_text", "text": "Need the weather."}],
            "encrypted_content": "gAAAA-opaque",
        }
    ]
    assert [i.get("type") for i in upstream["input"]] == [None, "reasoning", "function_call", "function_call_output"]
    # Thinking on → reasoning with a summary, and the encrypted content asked for (stateless).
    assert upstream["reasoning"] == {"effort": "low", "summary": "auto"}
    assert upstream["include"] == ["reasoning.encrypted_content"]


def _anthropic_upstream_answer() -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [
            {"type": "thinking", "thinking": "Let me check.", "signature": "EqQBsig"},
            {"type": "redacted_thinking", "data": "EmwKAhgBredacted"},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def test_anthropic_thinking_reaches_a_responses_client_and_goes_back_signed() -> None:
    answer = RESPONSES.encode_response(MESSAGES.decode_response(_anthropic_upstream_answer()), "m")
    kinds = [i["type"] for i in answer["output"]]
    assert kinds == ["reasoning", "reasoning", "function_call"]
    assert answer["output"][0]["summary"] == [{"type": "summary_text", "text": "Let me check."}]
    assert all(i["encrypted_content"].startswith("mpa1.") for i in answer["output"][:2])
    # The client edits the summary (allowed): the signed text still comes from the carried payload.
    history = [dict(i) for i in answer["output"]]
    history[0]["summary"] = [{"type": "summary_text", "text": "(edited)"}]
    turn2 = {
        "model": "m",
        "reasoning": {"effort": "medium"},
        "input": [
            {"role": "user", "content": "Weather?"},
            *history,
            {"type": "function_call_output", "call_id": "toolu_1", "output": "sunny"},
        ],
    }
    upstream = MESSAGES.encode_request(RESPONSES.decode_request(turn2), "claude")
    assert upstream["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "Let me check.", "signature": "EqQBsig"},
        {"type": "redacted_thinking", "data": "EmwKAhgBredacted"},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}},
    ]
    assert upstream["thinking"]["type"] == "enabled"


def test_thinking_is_turned_off_for_a_turn_whose_history_cannot_carry_signed_thinking() -> None:
    """A Chat client's tool turn has no thinking block: Anthropic would refuse it with thinking on."""
    req = CanonicalRequest(
        model="m",
        max_output_tokens=16000,
        reasoning=ReasoningConfig(effort="high"),
        messages=[
            Message(role="user", parts=[TextPart(text="Weather?")]),
            Message(role="assistant", parts=[ToolCallPart(id="call_1", name="weather", arguments="{}")]),
            Message(role="tool", parts=[ToolResultPart(tool_call_id="call_1", content="sunny")]),
        ],
        source_protocol="openai_chat",
    )
    assert "thinking" not in MESSAGES.encode_request(req, "claude")
    # The first turn (nothing to replay) and a turn after a signed block keep thinking on.
    first = CanonicalRequest(
        model="m",
        max_output_tokens=16000,
        reasoning=ReasoningConfig(effort="high"),
        messages=req.messages[:1],
        source_protocol="openai_chat",
    )
    assert MESSAGES.encode_request(first, "claude")["thinking"] == {"type": "enabled", "budget_tokens": 12000}
    signed = ReasoningPart(text="t", signature="sig")
    req.messages[1].parts.insert(0, signed)
    assert MESSAGES.encode_request(req, "claude")["thinking"]["type"] == "enabled"


def test_adaptive_thinking_asks_chat_and_responses_upstreams_for_reasoning() -> None:
    body = {
        "model": "m",
        "max_tokens": 8000,
        "thinking": {"type": "adaptive"},
        "messages": [{"role": "user", "content": "hi"}],
    }
    req = MESSAGES.decode_request(body)
    assert CHAT.encode_request(req, "gpt")["reasoning_effort"] == "medium"
    upstream = RESPONSES.encode_request(req, "gpt")
    assert upstream["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert upstream["include"] == ["reasoning.encrypted_content"]
    off = MESSAGES.decode_request({**body, "thinking": {"type": "disabled"}})
    assert "reasoning" not in RESPONSES.encode_request(off, "gpt")
    assert "reasoning_effort" not in CHAT.encode_request(off, "gpt")
