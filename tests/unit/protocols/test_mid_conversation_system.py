"""Claude Code's requests: `system` turns inside `messages` (accepted only under the mid-conversation-system
beta; see test_agent_compat for the header rule at the HTTP door) and the newer
Messages fields (`output_config`, `context_management`, `cache_control`) are accepted, kept in place for a
Messages upstream, and become the other protocols' own mid-conversation instructions."""

from __future__ import annotations

from typing import Any

import pytest

from modelport.core import TextPart
from modelport.errors import InvalidParameters
from modelport.protocols import anthropic_messages, openai_chat, openai_responses
from modelport.protocols.anthropic_messages.request_decode import system_turns_allowed


def claude_code_body() -> dict[str, Any]:
    return {
        "model": "agents/claude",
        "max_tokens": 32000,
        "system": [{"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "write a file"}]},
            {"role": "system", "content": "Available agent types: claude, Explore."},
            {"role": "assistant", "content": [{"type": "text", "text": "On it."}]},
            {
                "role": "system",
                "content": [{"type": "text", "text": "The date changed.", "cache_control": {"type": "ephemeral"}}],
            },
            {"role": "user", "content": "go on"},
        ],
        "thinking": {"type": "adaptive"},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "output_config": {"effort": "high"},
        "metadata": {"user_id": "u-1"},
        "stream": True,
    }


def test_system_turns_are_accepted_in_place() -> None:
    req = anthropic_messages.decode_request(claude_code_body(), system_turns=True)
    assert [m.role for m in req.messages] == ["user", "system", "assistant", "system", "user"]
    assert req.messages[1].parts == [TextPart(text="Available agent types: claude, Explore.")]
    assert req.system == [TextPart(text="You are a coding agent.")]


def test_messages_upstream_gets_them_back_untouched() -> None:
    body = claude_code_body()
    out = anthropic_messages.encode_request(anthropic_messages.decode_request(body, system_turns=True), "claude-up")
    assert out["messages"] == body["messages"]
    for field in ("context_management", "output_config", "system", "thinking"):
        assert out[field] == body[field], field


def test_chat_upstream_gets_system_messages_where_they_were() -> None:
    out = openai_chat.encode_request(anthropic_messages.decode_request(claude_code_body(), system_turns=True), "gpt-up")
    roles = [m["role"] for m in out["messages"]]
    assert roles == ["system", "user", "system", "assistant", "system", "user"]
    assert out["messages"][2]["content"] == "Available agent types: claude, Explore."
    assert out["messages"][4]["content"] == "The date changed."


def test_responses_upstream_gets_developer_items_where_they_were() -> None:
    out = openai_responses.encode_request(
        anthropic_messages.decode_request(claude_code_body(), system_turns=True), "gpt-up"
    )
    items = out["input"]
    assert [(i.get("type", "message"), i.get("role")) for i in items] == [
        ("message", "user"),
        ("message", "developer"),
        ("message", "assistant"),
        ("message", "developer"),
        ("message", "user"),
    ]
    assert items[1]["content"] == [{"type": "input_text", "text": "Available agent types: claude, Explore."}]
    assert out["instructions"] == "You are a coding agent."


def test_system_turns_without_the_beta_are_refused() -> None:
    with pytest.raises(InvalidParameters) as info:
        anthropic_messages.decode_request(claude_code_body())
    assert info.value.param == "messages[1].role"
    assert "Input should be 'user' or 'assistant'" in info.value.detail


@pytest.mark.parametrize(
    ("header", "allowed"),
    [
        ("mid-conversation-system-2026-04-07", True),
        ("claude-code-20250219, mid-conversation-system-clear-at-2026-08-21", True),
        ("claude-code-20250219,mid-conversation-system-2026-04-07,context-1m-2025-08-07", True),
        ("claude-code-20250219", False),
        ("mid-conversation-system", False),
        ("", False),
        (None, False),
    ],
)
def test_the_beta_header_spellings(header: str | None, allowed: bool) -> None:
    assert system_turns_allowed(header) is allowed
