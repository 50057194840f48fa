"""The protocol routes' answers, sent straight to the ASGI server: a whole JSON body, or an SSE stream.

Starlette's `Response` builds a header object per answer and its `StreamingResponse` (under uvicorn's ASGI
2.3) runs an anyio task group per stream; on the hottest path that was measurable CPU (bench/README.md).
These take the headers as raw pairs and watch for the client hanging up (`web.disconnect`); the
request's settlement and log row run after the answer's last byte (`run_after`). They are
`Response` subclasses only so FastAPI's route (`routes.py`, kept for the OpenAPI document) accepts them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Protocol

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from modelport.web.disconnect import DisconnectWatch

RawHeaders = list[tuple[bytes, bytes]]


class Chunks(Protocol):
    """What a stream answer sends: chunks to iterate, and a way to end them early (`relay.StreamRelay`, or
    any async generator)."""

    def __aiter__(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


_JSON = (b"content-type", b"application/json")
_SSE = (
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
)


def raw_headers(headers: Mapping[str, str]) -> RawHeaders:
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]


class BodyAnswer(Response):
    """A whole JSON body (`application/json`) with the given status and extra headers."""

    def __init__(self, body: bytes, *, status: int = 200, headers: Mapping[str, str] | None = None) -> None:
        self.status_code = status
        self.body = body
        self.background = None
        self.raw_headers = [_JSON, (b"content-length", str(len(body)).encode()), *raw_headers(headers or {})]
        self.after: Callable[[], None] | None = None  # see `run_after`

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            await send({"type": "http.response.body", "body": self.body})
        finally:
            run_after(self)


class StreamAnswer(Response):
    """An SSE stream: one body message per chunk the relay yields.

    A client that hangs up cancels the relay at once (it bills what was produced and releases the upstream),
    even while the upstream is silent (`web.disconnect.DisconnectWatch`)."""

    def __init__(self, chunks: Chunks, *, headers: Mapping[str, str] | None = None) -> None:
        self.status_code = 200
        self.chunks = chunks
        self.background = None
        self.raw_headers = [*_SSE, *raw_headers(headers or {})]
        self.after: Callable[[], None] | None = None  # see `run_after`

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            with DisconnectWatch(receive) as watch:
                try:
                    await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
                    async for chunk in self.chunks:
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    await send({"type": "http.response.body", "body": b""})
                except asyncio.CancelledError:
                    if not watch.gone:
                        raise
                    watch.handled()  # the hang-up was ours to handle, not a cancellation from outside
        finally:
            # Cancelled while sending, the relay sits at a `yield`: close it so it bills and releases now.
            try:
                await self.chunks.aclose()
            finally:
                run_after(self)


def run_after(answer: BodyAnswer | StreamAnswer) -> None:
    """Run (once) the work that follows an answer: the settlement and log row of its request, done once the
    last byte is handed to the server, sent or not, so that it is off the client's wait."""
    after, answer.after = answer.after, None
    if after is not None:
        after()
