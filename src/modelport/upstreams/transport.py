"""How the gateway talks to an upstream: HTTP (pooled aiohttp sessions) or the in-process local model.

A transport sends one JSON request and returns an `UpstreamReply` with the status and either the whole
body or an async iterator of raw body chunks (for SSE). Connection-level failures raise
`UpstreamUnreachable`; HTTP error statuses are returned, for the caller to judge.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol

import aiohttp
import orjson

from modelport.errors import InvalidParameters
from modelport.protocols.openai_chat import CODEC as CHAT
from modelport.protocols.openai_chat.stream_encode import DONE as CHAT_DONE
from modelport.protocols.openai_chat.stream_encode import frame as chat_frame
from modelport.upstreams.local_model import LocalModel, StreamCut, StreamInterrupted


class UpstreamUnreachable(Exception):
    """Connecting, sending or reading failed before a status was received (retryable)."""


class UpstreamStreamBroken(Exception):
    """The body stopped mid-way (connection lost or read timeout)."""


_TRANSPORT_ERRORS = (TimeoutError, aiohttp.ClientError, OSError)


class _ErrorsAs:
    # A class, not `contextlib.contextmanager`: entered several times per request, and a generator-based
    # context manager costs several times as much.
    __slots__ = ("error",)

    def __init__(self, error: type[Exception]) -> None:
        self.error = error

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc is not None and isinstance(exc, _TRANSPORT_ERRORS):
            raise self.error(type(exc).__name__) from exc


def http_errors_as(error: type[Exception]) -> _ErrorsAs:
    """The one place aiohttp and socket failures become ours: `error`, named after the original."""
    return _ErrorsAs(error)


async def _nothing() -> None:
    return None


@dataclass
class UpstreamReply:
    status: int
    headers: Mapping[str, str]
    body: bytes | None = None
    chunks: AsyncIterator[bytes] | None = None
    release: Callable[[], Awaitable[None]] = field(default=_nothing)
    # Ends a stream being read from another task (its reader sees UpstreamStreamBroken); see `cut`.
    abort: Callable[[], None] = field(default=lambda: None)
    # Why the stream was ended on our side (server shutdown), for the client's error event and the log.
    cut_reason: str | None = None

    def cut(self, reason: str) -> None:
        self.cut_reason = reason
        self.abort()

    async def read_all(self) -> bytes:
        if self.body is not None:
            return self.body
        assert self.chunks is not None
        parts = [chunk async for chunk in self.chunks]
        return b"".join(parts)


class Transport(Protocol):
    async def send(
        self, body: dict[str, Any], headers: Mapping[str, str], *, stream: bool, raw: bytes | None = None
    ) -> UpstreamReply:
        """Send `body` (`raw`, when given, is the same body as exact bytes to put on the wire)."""
        ...


class HttpTransport:
    def __init__(
        self,
        session: aiohttp.ClientSession,
        url: str,
        *,
        read_timeout: float,
        stream_read_timeout: float | None = None,
        connect_timeout: float = 10.0,
    ) -> None:
        self._session = session
        self._url = url
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout, sock_read=read_timeout)
        # A stream's reads (its headers, then between events) wait at most its idle timeout.
        self._stream_timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=connect_timeout, sock_read=stream_read_timeout or read_timeout
        )

    @property
    def closed(self) -> bool:
        return self._session.closed

    async def send(
        self, body: dict[str, Any], headers: Mapping[str, str], *, stream: bool, raw: bytes | None = None
    ) -> UpstreamReply:
        data = raw if raw is not None else orjson.dumps(body)
        with http_errors_as(UpstreamUnreachable):
            response = await self._session.post(
                self._url,
                data=data,
                headers={**headers, "content-type": "application/json"},
                timeout=self._stream_timeout if stream else self._timeout,
            )
        content_type = response.headers.get("content-type", "")
        if not stream or response.status != 200 or "text/event-stream" not in content_type:
            try:
                with http_errors_as(UpstreamUnreachable):
                    payload = await response.read()
            finally:
                response.release()
            return UpstreamReply(response.status, response.headers, body=payload)

        async def chunks() -> AsyncIterator[bytes]:
            with http_errors_as(UpstreamStreamBroken):
                async for chunk in response.content.iter_any():
                    yield chunk

        async def release() -> None:
            response.release() if response.closed else response.close()

        return UpstreamReply(response.status, response.headers, chunks=chunks(), release=release, abort=response.close)


class LocalTransport:
    """The embedded model behind the same interface; it speaks Chat Completions (its chunks and errors are
    written by that protocol's package)."""

    def __init__(self, model: LocalModel) -> None:
        self._model = model

    async def send(
        self, body: dict[str, Any], headers: Mapping[str, str], *, stream: bool, raw: bytes | None = None
    ) -> UpstreamReply:
        try:
            if not stream:
                completion = await self._model.complete(body)
                return UpstreamReply(200, {"content-type": "application/json"}, body=orjson.dumps(completion))
            cut = StreamCut()
            generator = self._model.stream(body, cut)
            # Some refusals (prompt longer than the context) surface only when generation starts: take the
            # first chunk now, so they become a plain 400 instead of an error inside a committed 200 stream.
            first = await anext(generator)
        except InvalidParameters as exc:
            error = CHAT.error_body(exc.text_message, exc.error_type, code=exc.code, param=exc.param)
            return UpstreamReply(400, {"content-type": "application/json"}, body=orjson.dumps(error))
        except StopAsyncIteration:
            first = None

        async def chunks() -> AsyncIterator[bytes]:
            try:
                if first is not None:
                    yield chat_frame(first)
                async for chunk in generator:
                    yield chat_frame(chunk)
                yield CHAT_DONE
            except StreamInterrupted as exc:  # cut by shutdown: the relay ends it like a broken upstream
                raise UpstreamStreamBroken("the local model's stream was cut") from exc
            finally:
                await generator.aclose()

        async def release() -> None:
            await generator.aclose()

        return UpstreamReply(
            200, {"content-type": "text/event-stream"}, chunks=chunks(), release=release, abort=cut.fire
        )
