"""The gateway's own request headers: `X-Svc-Session-Id` and `X-Svc-User-Id` (spec, Request headers)."""

from __future__ import annotations

import re

from starlette.datastructures import Headers

from modelport.errors import InvalidParameters

SVC_ID_RE = re.compile(r"^[A-Za-z0-9_-]{8,128}$")

# Session headers that client tools send on their own; X-Svc-Session-Id takes precedence over them.
TOOL_SESSION_HEADERS = ("x-claude-code-session-id", "session_id", "x-session-id", "x-session-affinity")


def check_svc_id(value: str, name: str) -> str:
    if not SVC_ID_RE.match(value):
        raise InvalidParameters(f"{name} must be 8 to 128 characters of ASCII letters, digits, '-' or '_'", param=name)
    return value


def svc_user_id(headers: Headers) -> str | None:
    value = headers.get("x-svc-user-id")
    return None if value is None else check_svc_id(value, "X-Svc-User-Id")


def session_id(headers: Headers) -> str | None:
    value = headers.get("x-svc-session-id")
    if value is not None:
        return check_svc_id(value, "X-Svc-Session-Id")
    for name in TOOL_SESSION_HEADERS:
        tool_value = headers.get(name)
        if tool_value:
            return tool_value[:256]
    return None
