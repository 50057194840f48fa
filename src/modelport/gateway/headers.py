"""The gateway's own request headers: `X-Svc-Session-Id` and `X-Svc-User-Id` (spec, Request headers)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from modelport.errors import InvalidParameters

SVC_ID_RE = re.compile(r"^[A-Za-z0-9_-]{8,128}$")

# Session headers that client tools send on their own, in order of precedence; X-Svc-Session-Id comes
# before all of them. Listed in docs/api/text-gateway.md.
TOOL_SESSION_HEADERS = (
    "x-claude-code-session-id",  # Claude Code
    "session-id",  # Codex CLI (current releases; also sends `thread-id` with the same value)
    "session_id",  # Codex CLI (earlier releases)
    "conversation_id",  # Codex CLI (earlier releases, beside session_id)
    "x-session-id",  # common gateway convention
    "x-session-affinity",  # common gateway convention
    "helicone-session-id",  # Helicone's convention, set by several tools' plugins
)


def check_svc_id(value: str, name: str) -> str:
    if not SVC_ID_RE.match(value):
        raise InvalidParameters(f"{name} must be 8 to 128 characters of ASCII letters, digits, '-' or '_'", param=name)
    return value


# The gateway's own headers, as the raw lowercase names of an ASGI scope (servers lowercase them).
SVC_HEADERS = frozenset(n.encode("latin-1") for n in ("x-svc-user-id", "x-svc-session-id", *TOOL_SESSION_HEADERS))


def pick_headers(raw: Iterable[tuple[bytes, bytes]], names: frozenset[bytes]) -> dict[str, str]:
    """The first value of each of `names` the request has, from the scope's raw headers in one pass.

    Starlette's `Headers` scans (and decodes) the whole list on every lookup; the text pipeline's dozen
    lookups per request (session headers, forwarded headers) were ~2 % of a fast-path request's CPU."""
    out: dict[str, str] = {}
    for key, value in raw:
        if key in names:
            name = key.decode("latin-1")
            if name not in out:
                out[name] = value.decode("latin-1")
    return out


def svc_user_id(headers: Mapping[str, str]) -> str | None:
    value = headers.get("x-svc-user-id")
    return None if value is None else check_svc_id(value, "X-Svc-User-Id")


def session_id(headers: Mapping[str, str]) -> str | None:
    if not headers:
        return None  # most requests carry none of the picked headers
    value = headers.get("x-svc-session-id")
    if value is not None:
        return check_svc_id(value, "X-Svc-Session-Id")
    for name in TOOL_SESSION_HEADERS:
        tool_value = headers.get(name)
        if tool_value:
            return tool_value[:256]
    return None
