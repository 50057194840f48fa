"""Judging a 200 before anything of it reaches the client, so a failure there is retried elsewhere.

A 200 is not yet an answer: a stream may open and then send an error event (OpenAI Responses sends
`response.created` first and a quota error after) or end before its first content event, and a whole body
may be an error object or not JSON at all. The attempt loop (`attempts.attempt_each`) reads that far
before it commits to a deployment: a stream up to its first event that carries output (or its final event,
an answer with no output), read in the upstream's protocol; those chunks are kept and replayed to the relay
unchanged (`Replay`), so the client sees only the answer of the deployment that served. A body is parsed
once here and the relay reuses it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import orjson

from modelport.core.codec import ProtocolCodec
from modelport.core.redaction import UPSTREAM_SECRETS
from modelport.core.sse import SSEParser
from modelport.upstreams.transport import UpstreamReply, UpstreamStreamBroken

_MAX_MESSAGE = 300


class NotAnswered(Exception):
    """The upstream answered 200 but failed before anything could be relayed: the next candidate is tried.
    `message` is for the deployment's health and the log, already cleaned of upstream secrets."""

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = UPSTREAM_SECRETS.scrub(message)[:_MAX_MESSAGE]
        self.code = code


async def _value(chunk: bytes) -> bytes:
    return chunk


class Replay:
    """The stream's chunks read while judging it, then the rest of the stream, as one iterator. Past the
    kept chunks each step is the upstream iterator's own (no extra coroutine per chunk)."""

    __slots__ = ("_head", "_rest")

    def __init__(self, head: list[bytes], rest: AsyncIterator[bytes]) -> None:
        head.reverse()
        self._head = head
        self._rest = rest

    def __aiter__(self) -> Replay:
        return self

    def __anext__(self) -> Awaitable[bytes]:
        if self._head:
            return _value(self._head.pop())
        return self._rest.__anext__()


async def judge_stream(reply: UpstreamReply, codec: ProtocolCodec, deadline: float | None) -> None:
    """Read `reply`'s stream (in `codec`, the upstream's protocol) up to its first content event or its end,
    and put what was read back in front of the rest. Raises `NotAnswered` (the reply released) when it
    sends an error event, ends or breaks first, or `deadline` (loop time) passes first."""
    assert reply.chunks is not None
    rest = reply.chunks.__aiter__()
    head: list[bytes] = []
    try:
        if deadline is None:
            await _read_head(rest, head, codec)
        else:
            async with asyncio.timeout_at(deadline):
                await _read_head(rest, head, codec)
    except TimeoutError:
        await reply.release()
        raise NotAnswered("no first event before the first-byte timeout") from None
    except UpstreamStreamBroken:
        await reply.release()
        raise NotAnswered("the upstream stream broke before its first event") from None
    except BaseException:
        await reply.release()
        raise
    reply.chunks = Replay(head, rest)


async def _read_head(rest: AsyncIterator[bytes], head: list[bytes], codec: ProtocolCodec) -> None:
    parser = SSEParser()
    async for chunk in rest:
        head.append(chunk)
        # Event by event, stopping at the first content event: a chunk often holds most of the stream, which
        # the relay parses again (only what precedes the first content is parsed twice).
        start, size = 0, len(chunk)
        while start < size:
            end = chunk.find(b"\n\n", start)
            stop = size if end < 0 else end + 2
            for sse in parser.feed(chunk[start:stop] if start or stop < size else chunk):
                if codec.is_error_event(sse.event, sse.data):
                    message = codec.error_event_message(sse.data) or "upstream error event in stream"
                    raise NotAnswered(message, code=_error_code(sse.data))
                if codec.carries_output(sse.event, sse.data) or codec.is_terminal(sse.event, sse.data):
                    return
            start = stop
    raise NotAnswered("the upstream stream ended before its first event")


def judge_body(reply: UpstreamReply, codec: ProtocolCodec) -> dict[str, Any]:
    """A whole 200 body, parsed: a JSON object that is not an error object. Raises `NotAnswered`."""
    payload = reply.body or b""
    try:
        parsed = orjson.loads(payload)
    except orjson.JSONDecodeError:
        raise NotAnswered("the upstream answered 200 with a body that is not JSON") from None
    if not isinstance(parsed, dict):
        raise NotAnswered("the upstream answered 200 with a body that is not a JSON object")
    error = parsed.get("error")
    if error and isinstance(error, dict | str):
        fault = codec.upstream_fault(payload)
        message = fault.message if fault is not None and fault.message else "an error object"
        raise NotAnswered(f"the upstream answered 200 with an error: {message}", code=fault.code if fault else None)
    return parsed


def _error_code(data: str) -> str | None:
    """The `code` of an in-stream error event (`context_length_exceeded`, ...), where it names one."""
    try:
        parsed: Any = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(parsed, dict):
        return None
    response = parsed.get("response")
    for holder in (parsed.get("error"), response.get("error") if isinstance(response, dict) else None, parsed):
        if isinstance(holder, dict) and isinstance(holder.get("code"), str):
            return str(holder["code"])
    return None
