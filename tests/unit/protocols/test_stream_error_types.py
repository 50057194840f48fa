"""In-stream error types across protocols (issue 20 rule 6): an upstream's Chat error becomes the gateway's own
type, as the Responses decoder already does, and a Messages stream names only Anthropic's own error types."""

from __future__ import annotations

import orjson
import pytest

from modelport.core import StreamError
from modelport.protocols.anthropic_messages.error_types import ANTHROPIC_ERROR_TYPES, stream_error_type
from modelport.protocols.openai_chat import CODEC as CHAT


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"message": "boom", "type": "server_error"}, StreamError("boom", "api_error")),
        ({"message": "slow", "type": "rate_limit_exceeded"}, StreamError("slow", "rate_limit_exceeded")),
        (
            {"message": "slow", "type": "requests", "code": "rate_limit_exceeded"},
            StreamError("slow", "rate_limit_exceeded"),
        ),
        ({"type": "invalid_request_error"}, StreamError("upstream error", "api_error")),
    ],
)
def test_chat_stream_errors_become_the_gateways_types(error: dict[str, str], expected: StreamError) -> None:
    assert CHAT.stream_decoder().feed(None, orjson.dumps({"error": error}).decode()) == [expected]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("overloaded_error", "overloaded_error"),
        ("api_error", "api_error"),
        ("server_error", "api_error"),
        ("rate_limit_exceeded", "rate_limit_error"),
        ("request_limited", "rate_limit_error"),
        ("insufficient_quota", "billing_error"),
        ("something_new", "api_error"),
    ],
)
def test_messages_stream_errors_use_anthropics_closed_set(given: str, expected: str) -> None:
    assert stream_error_type(given) == expected
    assert expected in ANTHROPIC_ERROR_TYPES
