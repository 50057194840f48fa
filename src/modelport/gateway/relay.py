"""Answering the client once the upstream has answered 200: whole bodies and SSE streams.

Fast path (same protocol): upstream SSE events are relayed one by one as they arrive, unchanged but for
the `model` they name (the client's id, `model_name.py`) and a Chat usage chunk the client did not ask
for; usage is read on the side. Translated path: upstream
events are decoded to the canonical stream and encoded in the client's protocol. Either way a stream that
breaks, or ends without its protocol's final event, is closed with the client protocol's error event.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from time import perf_counter
from typing import Any

import orjson

from modelport.core.accumulate import StreamAccumulator
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
from modelport.core.sse import SSEParser
from modelport.errors import UpstreamError
from modelport.gateway.context import Outcome, RequestContext
from modelport.gateway.model_name import ModelNamer
from modelport.gateway.upstream_call import OpenCall
from modelport.requestlog.record import RequestStatus
from modelport.upstreams.transport import UpstreamStreamBroken

STREAM_BROKEN_MESSAGE = "the upstream stream ended unexpectedly"
UPSTREAM_EVENT_MESSAGE = "upstream error event in stream"  # the event named no message
_MAX_EVENT_MESSAGE = 1000


def sse_frame(event: str | None, data: str) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data}\n\n".encode()


def _is_usage_only_chunk(data: str) -> bool:
    if '"usage"' not in data or '"choices"' not in data:
        return False
    try:
        chunk = orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return isinstance(chunk, dict) and chunk.get("choices") == [] and chunk.get("usage") is not None


@asynccontextmanager
async def _relaying(call: OpenCall, outcome: Outcome, finish: Callable[[], None]) -> AsyncIterator[None]:
    """The shared end of both stream relays: leaving by an exception (the client hung up) marks the request
    cancelled unless an error is recorded already; the upstream reply is released and the request
    finished, however the stream ends."""
    try:
        yield
    except BaseException:
        outcome.cancel()
        raise
    finally:
        await call.reply.release()
        finish()


def _cut(call: OpenCall, outcome: Outcome) -> str:
    """The stream ended without its protocol's final event: record why, for the client's error event."""
    message = call.reply.cut_reason or STREAM_BROKEN_MESSAGE
    outcome.fail(message)
    return message


def upstream_event_message(data: str) -> str:
    """The message of an upstream's in-stream error event, for the request log: Chat's and Messages'
    ``error.message``, Responses' ``message`` (``error`` event) or ``response.error.message``
    (``response.failed``)."""
    try:
        parsed: Any = orjson.loads(data)
    except orjson.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        response = parsed.get("response")
        for holder in (parsed.get("error"), response.get("error") if isinstance(response, dict) else None, parsed):
            if isinstance(holder, dict) and isinstance(holder.get("message"), str) and holder["message"]:
                return str(holder["message"])[:_MAX_EVENT_MESSAGE]
    return UPSTREAM_EVENT_MESSAGE


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


# ---------------------------------------------------------------- non-streaming


def fast_body(ctx: RequestContext, call: OpenCall, payload: bytes, outcome: Outcome) -> bytes:
    """The upstream body as is but for `model` (the client's id); usage read from it."""
    try:
        parsed: Any = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise UpstreamError("the upstream answered with a body that is not JSON") from exc
    if isinstance(parsed, dict):
        outcome.usage = ctx.codec.usage_from_body(parsed)
        outcome.result = parsed
    return ModelNamer(ctx.canonical.model).body(payload, parsed)


def translated_body(ctx: RequestContext, call: OpenCall, payload: bytes, response_id: str, outcome: Outcome) -> bytes:
    try:
        parsed: Any = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise UpstreamError("the upstream answered with a body that is not JSON") from exc
    if not isinstance(parsed, dict):
        raise UpstreamError("the upstream answered with an unexpected body")
    canonical: CanonicalResponse = call.upstream_codec.decode_response(parsed)
    canonical.id = response_id
    canonical.model = ctx.canonical.model
    outcome.usage = canonical.usage
    encoded = ctx.codec.encode_response(canonical, ctx.canonical.model, request=ctx.canonical)
    outcome.result = encoded
    return orjson.dumps(encoded)


# ---------------------------------------------------------------- streaming


async def fast_stream(
    ctx: RequestContext, call: OpenCall, outcome: Outcome, finish: Callable[[], None]
) -> AsyncGenerator[bytes, None]:
    parser = SSEParser()
    sniffer = ctx.codec.usage_sniffer()
    namer = ModelNamer(ctx.canonical.model)
    codec = ctx.codec
    done = errored = False
    assert call.reply.chunks is not None
    # Only teams that keep payloads pay for decoding the relayed stream on the side.
    keeper = _Keeper(ctx) if ctx.auth.log_retention else None
    async with _relaying(call, outcome, finish):
        try:
            try:
                async for chunk in call.reply.chunks:
                    began = perf_counter()
                    out: list[bytes] = []
                    for sse in parser.feed(chunk):
                        if not outcome.first_output and codec.carries_output(sse.event, sse.data):
                            outcome.first_output = began
                        sniffer.feed(sse.event, sse.data)
                        if keeper is not None:
                            keeper.feed(sse.event, sse.data)
                        if codec.is_terminal(sse.event, sse.data):
                            done = True
                        data = sse.data
                        if codec.is_error_event(sse.event, data):
                            # The upstream's own error reaches the client; it is the one error it gets.
                            errored = True
                            data = UPSTREAM_SECRETS.scrub(data)  # some upstreams quote their key
                            outcome.fail(upstream_event_message(data))
                        if call.strip_usage_chunk and _is_usage_only_chunk(data):
                            continue
                        outcome.produced_chars += 4  # ~1 token per streamed delta (see Outcome)
                        out.append(sse_frame(sse.event, namer.event(data)))
                    outcome.relay_seconds += perf_counter() - began
                    if out:
                        yield b"".join(out)
                outcome.upstream_done = perf_counter()
            except UpstreamStreamBroken:
                done = False
            if not done and not errored:
                encoder = ctx.codec.stream_encoder(ctx.canonical.model, ctx.request_id, False)
                yield encoder.error(_cut(call, outcome))
        finally:
            outcome.usage = sniffer.usage
            if keeper is not None:
                outcome.result = keeper.accumulator


async def translated_stream(
    ctx: RequestContext, call: OpenCall, response_id: str, outcome: Outcome, finish: Callable[[], None]
) -> AsyncGenerator[bytes, None]:
    parser = SSEParser()
    decoder = call.upstream_codec.stream_decoder()
    encoder = ctx.codec.stream_encoder(
        ctx.canonical.model, response_id, ctx.canonical.include_usage, request=ctx.canonical
    )
    accumulator = StreamAccumulator()
    done = False
    assert call.reply.chunks is not None

    def encode_all(events: list[Any]) -> bytes:
        nonlocal done
        out: list[bytes] = []
        for event in events:
            accumulator.feed(event)
            if isinstance(event, TextDelta | RefusalDelta | ReasoningDelta):
                outcome.produced_chars += len(event.text)  # all output is billed, not only the answer text
                if not outcome.first_output:
                    outcome.first_output = perf_counter()
            elif isinstance(event, ToolCallDelta):
                outcome.produced_chars += len(event.arguments)
                if not outcome.first_output:
                    outcome.first_output = perf_counter()
            elif isinstance(event, UsageUpdate):
                outcome.usage = event.usage
            elif isinstance(event, StreamError):
                message = UPSTREAM_SECRETS.scrub(event.message)  # some upstreams quote their key
                outcome.fail(message)
                done = True
                out.append(encoder.error(message, event.type))
                return b"".join(out)
            out.append(encoder.encode(event))
        return b"".join(out)

    async with _relaying(call, outcome, finish):
        try:
            try:
                async for chunk in call.reply.chunks:
                    for sse in parser.feed(chunk):
                        began = perf_counter()
                        if _ends_well(call, sse.event, sse.data):
                            done = True
                        data = encode_all(decoder.feed(sse.event, sse.data))
                        outcome.relay_seconds += perf_counter() - began
                        if data:
                            yield data
                        if outcome.status == RequestStatus.ERROR:
                            return
                outcome.upstream_done = perf_counter()
                tail = encode_all(decoder.close())
                if tail:
                    yield tail
            except UpstreamStreamBroken:
                done = False
            yield encoder.close() if done else encoder.error(_cut(call, outcome))
        finally:
            outcome.result = accumulator
