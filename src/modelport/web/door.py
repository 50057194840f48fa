"""Pure ASGI middleware: refuse a request whose path or query string carries a NUL byte (400).

PostgreSQL rejects NUL in text, so a NUL that reached a file id, an admin path parameter or a query
filter would turn into a 500 there and a 404 on SQLite. Refusing it at the door gives one answer on both.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from modelport.errors import InvalidParameters
from modelport.web.errors import Host, render_error


def has_nul(scope: Scope) -> bool:
    query: bytes = scope.get("query_string", b"")
    return "\x00" in scope["path"] or b"\x00" in query or b"%00" in query


def nul_refusal() -> InvalidParameters:
    """The 400 for a NUL byte in the path or query (the text gateway's protocol entry answers it too)."""
    return InvalidParameters("the request path or query string contains a NUL byte (%00)")


class RefuseNulBytes:
    def __init__(self, app: ASGIApp, *, host: Host) -> None:
        self.app = app
        self.host = host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and has_nul(scope):
            await render_error(nul_refusal(), self.host)(scope, receive, send)
            return
        await self.app(scope, receive, send)
