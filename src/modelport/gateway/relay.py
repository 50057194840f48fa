"""Answering the client once the upstream has answered 200: whole bodies and SSE streams.

Fast path (same protocol): upstream SSE events are relayed one by one as they arrive, unchanged but for
the `model` they name (the client's id, `model_name.py`) and a Chat usage chunk the client did not ask
for; usage is read on the side. Translated path: upstream
events are decoded to the canonical stream and encoded in the client's protocol. Either way a stream that
breaks, or ends without its protocol's final event, is closed with the client protocol's error event.

A relay reports what it learned (usage, the answer for the log, an error, what was produced) in a
`Relayed`: returned with a whole body; for a stream, a `StreamRelay` is iterated for the client's chunks and
then read (`StreamRelay.result`, set once the stream has ended however it ended), as a streamed response
is. Its timings go to the request's `Timings`; the pipeline decides settlement and logging from them.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from time import perf_counter
from typing import Any

import orjson

from modelport.core.accumulate import StreamAccumulator
from modelport.core.codec import ProtocolCodec
from modelport.core.events import (
    ReasoningDelta,
    RefusalDelta,
    StreamError,
    TextDelta,
    ToolCallDelta,
    UsageUpdate,
)
from modelport.core.redaction import UPSTREAM_SECRETS
from modelport.core.response import CanonicalResponse
from modelport.core.sse import SSEParser, sse_frame
from modelport.errors import UpstreamError
from modelport.gateway.context import Relayed, RequestContext, Timings
from modelport.gateway.model_name import ModelNamer
from modelport.gateway.upstream_call import OpenCall
from modelport.upstreams.transport import UpstreamStreamBroken

STREAM_BROKEN_MESSAGE = "the upstream stream ended unexpectedly"
UPSTREAM_EVENT_MESSAGE = "upstream error event in stream"  # the event named no message
_MAX_EVENT_MESSAGE = 1000


class StreamRelay:
    """One stream's relay: iterate it for the client's chunks (the same-protocol fast path, or translated);
    once it has ended (the last chunk, a hang-up, or `aclose`), `result` is what it learned. The upstream
    reply is released at its end, however it ends."""

    __slots__ = ("_call", "_chunks", "result")

    def __init__(self, ctx: RequestContext, call: OpenCall, timings: Timings, response_id: str) -> None:
        self._call = call
        self.result: Relayed | None = None
        self._chunks = (
            _fast_stream(ctx, call, timings, self)
            if call.fast
            else _translated_stream(ctx, call, response_id, timings, self)
        )

    def __aiter__(self) -> AsyncGenerator[bytes, None]:
        return self._chunks

    async def aclose(self) -> None:
        """End the relay now (the client is gone, or the answer is over). A relay closed before its first
        chunk relayed nothing: the client left; its upstream reply is released here."""
        await self._chunks.aclose()
        if self.result is None:
            await self._call.reply.release()
            self.result = Relayed(hung_up=True)


@asynccontextmanager
async def _relaying(call: OpenCall, relayed: Relayed, relay: StreamRelay) -> AsyncIterator[None]:
    """The shared end of both stream relays: leaving by an exception means the client hung up; the upstream
    reply is released and what was learned becomes the relay's `result`, however the stream ends."""
    try:
        yield
    except BaseException:
        relayed.hung_up = True
        raise
    finally:
        await call.reply.release()
        relay.result = relayed


def _cut(call: OpenCall, relayed: Relayed) -> str:
    """The stream ended without its protocol's final event: record why, for the client's error event."""
    relayed.error = call.reply.cut_reason or STREAM_BROKEN_MESSAGE
    return relayed.error


def upstream_event_message(codec: ProtocolCodec, data: str) -> str:
    """The message of an upstream's in-stream error event (read by its codec), for the request log."""
    message = codec.error_event_message(data)
    return message[:_MAX_EVENT_MESSAGE] if message else UPSTREAM_EVENT_MESSAGE


def _ends_well(call: OpenCall, event: str | None, data: str) -> bool:
    """The upstream's final event, other than an error event (a translated stream closes normally after it)."""
    upstream = call.upstream_codec
    return upstream.is_terminal(event, data) and not upstream.is_error_event(event, data)


class _Keeper:
    """Decodes a relayed stream into a response, for the request log of teams that retain payloads."""

    def __init__(self, ctx: RequestContext) -> None:
        self._decoder = ctx.codec.stream_decoder()
        self.accumulator = StreamAccumulator()

    def feed(self, event: str | None, data: str) -> None:
        for item in self._decoder.feed(event, data):
            self.accumulator.feed(item)


def _answer_model(ctx: RequestContext, call: OpenCall) -> str:
    """The model the answer names: the one the client asked for, or the fallback model that served."""
    return ctx.canonical.model if call.served is None else call.served.id


def _json_body(payload: bytes) -> Any:
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise UpstreamError("the upstream answered with a body that is not JSON") from exc


# ---------------------------------------------------------------- non-streaming


def fast_body(ctx: RequestContext, call: OpenCall, payload: bytes) -> tuple[bytes, Relayed]:
    """The upstream body as is but for `model` (the client's id); usage read from it."""
    parsed = call.parsed if call.parsed is not None else _json_body(payload)
    relayed = Relayed()
    if isinstance(parsed, dict):
        relayed.usage = ctx.codec.usage_from_body(parsed)
        relayed.result = parsed
    return ModelNamer(_answer_model(ctx, call)).body(payload, parsed), relayed


def translated_body(ctx: RequestContext, call: OpenCall, payload: bytes, response_id: str) -> tuple[bytes, Relayed]:
    parsed = call.parsed if call.parsed is not None else _json_body(payload)
    if not isinstance(parsed, dict):
        raise UpstreamError("the upstream answered with an unexpected body")
    canonical: CanonicalResponse = call.upstream_codec.decode_response(parsed)
    canonical.id = response_id
    canonical.model = _answer_model(ctx, call)
    encoded = ctx.codec.encode_response(canonical, canonical.model, request=ctx.canonical)
    return orjson.dumps(encoded), Relayed(usage=canonical.usage, result=encoded)


# ---------------------------------------------------------------- streaming


async def _fast_stream(
    ctx: RequestContext, call: OpenCall, timings: Timings, relay: StreamRelay
) -> AsyncGenerator[bytes, None]:
    parser = SSEParser()
    sniffer = ctx.codec.usage_sniffer()
    namer = ModelNamer(_answer_model(ctx, call))
    codec = ctx.codec
    relayed = Relayed()
    ended = errored = False
    assert call.reply.chunks is not None
    # Only teams that keep payloads pay for decoding the relayed stream on the side.
    # The same for a stream the team's response cache may store.
    keeper = _Keeper(ctx) if ctx.auth.log_retention or (ctx.cache is not None and ctx.cache.writes) else None
    async with _relaying(call, relayed, relay):
        try:
            try:
                async for chunk in call.reply.chunks:
                    began = perf_counter()
                    out: list[bytes] = []
                    for sse in parser.feed(chunk):
                        if not timings.first_output and codec.carries_output(sse.event, sse.data):
                            timings.first_output = began
                        sniffer.feed(sse.event, sse.data)
                        if keeper is not None:
                            keeper.feed(sse.event, sse.data)
                        if codec.is_terminal(sse.event, sse.data):
                            ended = True
                        data = sse.data
                        if codec.is_error_event(sse.event, data):
                            # The upstream's own error reaches the client; it is the one error it gets.
                            errored = True
                            data = UPSTREAM_SECRETS.scrub(data)  # some upstreams quote their key
                            relayed.error = upstream_event_message(codec, data)
                        if call.strip_usage_chunk and codec.is_usage_only(data):
                            continue
                        relayed.relayed_events += 1
                        out.append(sse_frame(sse.event, namer.event(data)))
                    timings.relay_seconds += perf_counter() - began
                    if out:
                        yield b"".join(out)
                timings.upstream_done = perf_counter()
            except UpstreamStreamBroken:
                ended = False
            if not ended and not errored:
                encoder = ctx.codec.stream_encoder(_answer_model(ctx, call), ctx.request_id, False)
                yield encoder.error(_cut(call, relayed))
        finally:
            relayed.usage = sniffer.usage
            if keeper is not None:
                relayed.result = keeper.accumulator


async def _translated_stream(
    ctx: RequestContext, call: OpenCall, response_id: str, timings: Timings, relay: StreamRelay
) -> AsyncGenerator[bytes, None]:
    parser = SSEParser()
    decoder = call.upstream_codec.stream_decoder()
    encoder = ctx.codec.stream_encoder(
        _answer_model(ctx, call), response_id, ctx.canonical.include_usage, request=ctx.canonical
    )
    accumulator = StreamAccumulator()
    relayed = Relayed(result=accumulator)
    ended = False
    assert call.reply.chunks is not None

    def encode_all(events: list[Any]) -> bytes:
        nonlocal ended
        out: list[bytes] = []
        for event in events:
            accumulator.feed(event)
            if isinstance(event, TextDelta | RefusalDelta | ReasoningDelta):
                relayed.produced_chars += len(event.text)  # all output is billed, not only the answer text
                if not timings.first_output:
                    timings.first_output = perf_counter()
            elif isinstance(event, ToolCallDelta):
                relayed.produced_chars += len(event.arguments)
                if not timings.first_output:
                    timings.first_output = perf_counter()
            elif isinstance(event, UsageUpdate):
                relayed.usage = event.usage
            elif isinstance(event, StreamError):
                message = UPSTREAM_SECRETS.scrub(event.message)  # some upstreams quote their key
                relayed.error = message
                ended = True
                out.append(encoder.error(message, event.type))
                return b"".join(out)
            out.append(encoder.encode(event))
        return b"".join(out)

    async with _relaying(call, relayed, relay):
        try:
            async for chunk in call.reply.chunks:
                for sse in parser.feed(chunk):
                    began = perf_counter()
                    if _ends_well(call, sse.event, sse.data):
                        ended = True
                    data = encode_all(decoder.feed(sse.event, sse.data))
                    timings.relay_seconds += perf_counter() - began
                    if data:
                        yield data
                    if relayed.error is not None:
                        return
            timings.upstream_done = perf_counter()
            tail = encode_all(decoder.close())
            if tail:
                yield tail
        except UpstreamStreamBroken:
            ended = False
        yield encoder.close() if ended else encoder.error(_cut(call, relayed))
