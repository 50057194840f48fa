"""`carries_output`: which stream event times the time-to-first-token metric, per protocol."""

from __future__ import annotations

import pytest

from modelport.protocols import get_codec


@pytest.mark.parametrize(
    ("protocol", "event", "data", "expected"),
    [
        # Chat: the role chunk with an empty content carries nothing; text, tool calls and reasoning do.
        ("openai_chat", None, '{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}', False),
        ("openai_chat", None, '{"choices":[{"index":0,"delta":{"content":"Hi"}}]}', True),
        ("openai_chat", None, '{"choices": [{"index": 0, "delta": {"content": "Hi"}}]}', True),
        ("openai_chat", None, '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0}]}}]}', True),
        ("openai_chat", None, '{"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}', True),
        ("openai_chat", None, '{"choices":[],"usage":{"prompt_tokens":1}}', False),
        ("openai_chat", None, "[DONE]", False),
        ("openai_chat", None, "not json {", False),
        ("openai_responses", "response.created", '{"type":"response.created"}', False),
        ("openai_responses", "response.output_text.delta", '{"type":"response.output_text.delta"}', True),
        ("openai_responses", "response.function_call_arguments.delta", "{}", True),
        ("openai_responses", None, '{"type":"response.output_text.delta","delta":"x"}', True),
        ("anthropic_messages", "message_start", '{"type":"message_start"}', False),
        ("anthropic_messages", "content_block_start", '{"type":"content_block_start"}', False),
        ("anthropic_messages", "content_block_delta", '{"type":"content_block_delta"}', True),
        ("anthropic_messages", None, '{"type":"content_block_delta","delta":{}}', True),
    ],
)
def test_carries_output(protocol: str, event: str | None, data: str, expected: bool) -> None:
    assert get_codec(protocol).carries_output(event, data) is expected
