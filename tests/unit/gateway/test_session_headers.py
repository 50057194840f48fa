"""Session affinity reads X-Svc-Session-Id first, then the session headers coding tools send on their own."""

from __future__ import annotations

import pytest
from starlette.datastructures import Headers

from modelport.errors import InvalidParameters
from modelport.gateway.headers import SVC_HEADERS, TOOL_SESSION_HEADERS, pick_headers, session_id


@pytest.mark.parametrize(
    "name",
    ["X-Claude-Code-Session-Id", "session-id", "session_id", "conversation_id", "x-session-id", "Helicone-Session-Id"],
)
def test_tool_session_headers_are_read(name: str) -> None:
    assert session_id(Headers({name: "01a2089b-d05b-7d11-8969-07dcdcda239e"})) == "01a2089b-d05b-7d11-8969-07dcdcda239e"


def test_codex_headers_as_codex_sends_them() -> None:
    sent = {"session-id": "0199-codex", "thread-id": "0199-codex", "x-client-request-id": "0199-codex"}
    assert session_id(Headers(sent)) == "0199-codex"


def test_svc_header_comes_first_and_is_validated() -> None:
    both = {"x-svc-session-id": "mine-12345", "session-id": "codex-session", "x-claude-code-session-id": "cc"}
    assert session_id(Headers(both)) == "mine-12345"
    with pytest.raises(InvalidParameters):
        session_id(Headers({"x-svc-session-id": "bad id!"}))


def test_claude_code_header_wins_over_generic_ones() -> None:
    assert TOOL_SESSION_HEADERS[0] == "x-claude-code-session-id"
    assert session_id(Headers({"x-session-id": "generic-1", "x-claude-code-session-id": "claude-1"})) == "claude-1"


def test_no_session_header() -> None:
    assert session_id(Headers({"user-agent": "x"})) is None


def test_picked_headers_keep_the_first_value_of_the_names_asked_for() -> None:
    raw = [
        (b"user-agent", b"x"),
        (b"session-id", b"first-1234"),
        (b"anthropic-beta", b"tools-1"),
        (b"session-id", b"second-1234"),
    ]
    picked = pick_headers(raw, SVC_HEADERS | {b"anthropic-beta"})
    assert picked == {"session-id": "first-1234", "anthropic-beta": "tools-1"}
    assert session_id(picked) == session_id(Headers(raw=raw)) == "first-1234"
