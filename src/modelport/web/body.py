"""Request bodies counted as they arrive, and refused (413) the moment they pass their cap.

`Content-Length` can be absent (a chunked body) or a lie, so a cap checked after `request.body()` lets a
client put any amount into memory first. Two pieces:

- `read_body(request, max_bytes)`: what a route that takes a large body uses (the text gateway's
  protocol entry and `count_tokens`, media task creation, asset registration, console forms): chunks are
  added up as they come and the read stops at the cap (`capped_chunks`, which an idempotent upload's spool
  reads too). It tells `BodyLimit` that the route counts for itself.
- `BodyLimit`: pure ASGI middleware on both hosts (`apps/factory.finish_app`) for every other route
  (FastAPI's JSON bodies, forms): it counts the bytes the app receives and, past `DEFAULT_MAX_BODY_BYTES`,
  answers 413 itself and hands the app a disconnect, so nothing more is read or buffered.

Every 413 closes the connection (`Connection: close`): the rest of the body is never read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from starlette.requests import ClientDisconnect, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from modelport.errors import PayloadTooLarge
from modelport.strict_int import plain_int
from modelport.web.errors import Host, render_error

# A route that reads no large body (admin JSON, webhook settings, console forms, utilities) gets this.
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
_GUARD = "modelport.body_guard"


@dataclass(slots=True)
class _Guard:
    max_bytes: int
    route_counts: bool = False


def body_too_large(max_bytes: int) -> PayloadTooLarge:
    size = f"{max_bytes // (1024 * 1024)} MB" if max_bytes % (1024 * 1024) == 0 else f"{max_bytes} bytes"
    return PayloadTooLarge(f"the request body is larger than {size}")  # it closes the connection


def declared_length(scope: Scope) -> int | None:
    """The `Content-Length` header as a number (None when absent or not plain ASCII digits)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return plain_int(value.decode("latin-1"))
    return None


async def capped_chunks(
    request: Request, max_bytes: int, too_large: PayloadTooLarge | None = None
) -> AsyncIterator[bytes]:
    """The body's chunks as they arrive, refused with 413 (`too_large`, else `body_too_large`) as soon as
    more than `max_bytes` arrived or were declared. The one capped reader: the route counts for itself."""
    _take_over(request, max_bytes, too_large)
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise too_large or body_too_large(max_bytes)
        yield chunk


async def read_body(request: Request, max_bytes: int, too_large: PayloadTooLarge | None = None) -> bytes:
    """The whole body, capped as `capped_chunks` caps it (413 as soon as more than `max_bytes` arrived or were
    declared; `ClientDisconnect` when the client hangs up first), kept as the request's `body()`.

    A plain loop over `receive()`: the text gateway reads every request this way, and the two async
    generators of `capped_chunks` over Starlette's `stream()` cost more than the loop's own work."""
    _take_over(request, max_bytes, too_large)
    if hasattr(request, "_body"):
        body: bytes = request._body
    else:
        chunks: list[bytes] = []
        size = 0
        receive = request.receive
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                request._is_disconnected = True
                raise ClientDisconnect()
            chunk = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > max_bytes:
                    raise too_large or body_too_large(max_bytes)
                chunks.append(chunk)
            if not message.get("more_body", False):
                break
        request._stream_consumed = True
        body = request._body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    if len(body) > max_bytes:
        raise too_large or body_too_large(max_bytes)
    return body


def _take_over(request: Request, max_bytes: int, too_large: PayloadTooLarge | None) -> None:
    """The route counts its body itself from here; a body declared larger than the cap is refused at once."""
    counts_for_itself(request)
    declared = declared_length(request.scope)
    if declared is not None and declared > max_bytes:
        raise too_large or body_too_large(max_bytes)


def counts_for_itself(request: Request) -> None:
    """For a route that streams its body under its own cap (file uploads): `BodyLimit` leaves it alone."""
    guard = request.scope.get("state", {}).get(_GUARD)
    if isinstance(guard, _Guard):
        guard.route_counts = True


class BodyLimit:
    def __init__(self, app: ASGIApp, *, host: Host, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app = app
        self.host = host
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        guard = _Guard(self.max_bytes)
        scope.setdefault("state", {})[_GUARD] = guard
        received = 0
        refused = False
        started = False

        async def counted_receive() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            if not guard.route_counts and received == 0:
                declared = declared_length(scope)
                if declared is not None and declared > guard.max_bytes:
                    await refuse()
                    return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request" and not guard.route_counts:
                received += len(message.get("body", b""))
                if received > guard.max_bytes:
                    await refuse()
                    return {"type": "http.disconnect"}
            return message

        async def refuse() -> None:
            nonlocal refused
            refused = True
            if not started:
                await render_error(body_too_large(guard.max_bytes), self.host)(scope, receive, send)

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused:
                return  # the 413 is the answer; what the app makes of the disconnect goes nowhere
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, counted_receive, guarded_send)
