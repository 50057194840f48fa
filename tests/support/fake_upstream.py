"""A scriptable fake upstream: a real HTTP server on 127.0.0.1 speaking all three text protocols.

It answers ``POST .../chat/completions``, ``.../responses`` and ``.../messages`` (any prefix, any query
string such as ``?beta=true``) in each protocol's real shape, streaming when the body says
``"stream": true``. A test scripts what it does next::

    with FakeUpstream() as up:                      # or: async with FakeUpstream() as up
        up.push(Reply.text("hi", usage=Usage(12, 3)))         # next call, any path
        up.push(Reply.error(429, headers={"retry-after": "1"}), path="/v1/messages")
        up.set_default(Reply.tool_call("get_weather", {"city": "Paris"}))
        ... point the gateway at up.base_url ...
        assert up.call_count("/v1/messages") == 1
        assert up.last_request.json["model"] == "claude-x"

Scripted replies are consumed first-in first-out (the first one whose path matches); when none is
left the default reply answers. The server runs in its own thread with its own event loop, so it
serves sync and async tests alike and never competes with the test's loop.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import threading
from collections import Counter
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from aiohttp import web

from tests.support import fake_shapes as shapes
from tests.support.fake_shapes import Answer, Finish, Protocol, ToolCall, Usage

__all__ = ["Answer", "FakeUpstream", "RecordedRequest", "Reply", "ServerThread", "ToolCall", "Usage"]


class ServerThread:
    """Runs an aiohttp application on 127.0.0.1:<free port> in a background thread."""

    def __init__(self, app: web.Application, *, name: str = "fake-upstream") -> None:
        self._app = app
        self._name = name
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        # Bind here, in the caller's thread, so the port is known before start() returns.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self._thread = threading.Thread(target=self._run, args=(sock,), name=self._name, daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError(f"{self._name} did not start")
        if self._error is not None:
            raise RuntimeError(f"{self._name} failed to start") from self._error

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def _run(self, sock: socket.socket) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve(sock))
        except BaseException as exc:  # reported to start() if it happens before ready
            self._error = exc
            self._ready.set()
        finally:
            loop.close()

    async def _serve(self, sock: socket.socket) -> None:
        self._stopping = asyncio.Event()
        # A short shutdown timeout: a test that left a request hanging must not stall teardown.
        runner = web.AppRunner(self._app, access_log=None, handle_signals=False, shutdown_timeout=0.5)
        await runner.setup()
        site = web.SockSite(runner, sock)
        await site.start()
        self._ready.set()
        try:
            await self._stopping.wait()
        finally:
            await runner.cleanup()


class ThreadedServer:
    """Context-manager plumbing shared by the fake servers (sync and async `with`)."""

    _server: ServerThread

    @property
    def base_url(self) -> str:
        return self._server.base_url

    def start(self) -> None:
        self._server.start()

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> Any:
        self.start()
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    async def __aenter__(self) -> Any:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake received it. Header names are lower-cased."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def record(request: web.Request, body: bytes) -> RecordedRequest:
    return RecordedRequest(
        method=request.method,
        path=request.path,
        query=request.query_string,
        headers={k.lower(): v for k, v in request.headers.items()},
        body=body,
    )


@dataclass(frozen=True)
class Reply:
    """What the fake does for one call.

    - `answer`: the model output, rendered in the caller's protocol (ignored for errors).
    - `status` >= 400: answer with that status and the protocol's error body instead.
    - `delay`: seconds to wait before anything is sent; `chunk_delay`: seconds between stream events.
    - `drop_after`: close the connection abruptly after that many stream events (0 = before any byte,
      which is also what a non-streaming call gets).
    - `error_after`: after that many stream events send the protocol's in-stream error event and end.
    - `stall_after`: after that many stream events go quiet for `stall_seconds` (the connection open), then
      go on.
    - `headers`: extra response headers (e.g. ``retry-after``).
    - `raw_body`: a 200 whose body is these bytes as they are (an error object, broken JSON; streamed: the
      whole event stream), whatever the protocol.
    """

    answer: Answer = field(default_factory=lambda: Answer(text="Hello from the fake upstream."))
    status: int = 200
    error_message: str = "fake upstream error"
    error_type: str | None = None
    error_code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    chunk_delay: float = 0.0
    drop_after: int | None = None
    error_after: int | None = None
    stall_after: int | None = None
    stall_seconds: float = 0.0
    raw_body: bytes | None = None

    @classmethod
    def text(cls, text: str, *, usage: Usage | None = None, finish: Finish = "stop", **kw: Any) -> Reply:
        return cls(answer=Answer(text=text, usage=usage or Usage(), finish=finish), **kw)

    @classmethod
    def tool_call(cls, name: str, arguments: dict[str, Any], *, call_id: str = "", text: str = "", **kw: Any) -> Reply:
        return cls.tool_calls([ToolCall(name, arguments, call_id)], text=text, **kw)

    @classmethod
    def tool_calls(cls, calls: list[ToolCall], *, text: str = "", usage: Usage | None = None, **kw: Any) -> Reply:
        return cls(answer=Answer(text=text, tool_calls=tuple(calls), usage=usage or Usage()), **kw)

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "fake upstream error",
        *,
        error_type: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
        **kw: Any,
    ) -> Reply:
        return cls(
            status=status,
            error_message=message,
            error_type=error_type,
            error_code=code,
            headers=headers or {},
            **kw,
        )

    @classmethod
    def drop(cls, after_events: int = 0, **kw: Any) -> Reply:
        return cls(drop_after=after_events, **kw)


def protocol_of(path: str) -> Protocol | None:
    for suffix, proto in (
        ("/chat/completions", "chat"),
        ("/responses", "responses"),
        ("/messages", "messages"),
    ):
        if path.endswith(suffix):
            return proto  # type: ignore[return-value]
    return None


class FakeUpstream(ThreadedServer):
    """The scriptable fake; see the module docstring."""

    def __init__(self, default: Reply | None = None, *, model_list: list[str] | None = None) -> None:
        self._lock = threading.Lock()
        self._default = default or Reply()
        self._script: list[tuple[str | None, Reply]] = []
        self._requests: list[RecordedRequest] = []
        self._ids = itertools.count(1)
        self._models = model_list or ["fake-model"]
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/{tail:.*}", self._handle)
        app.router.add_get("/{tail:.*}", self._models_list)
        self._server = ServerThread(app, name="fake-upstream")

    # -- scripting and inspection (called from the test's thread)

    def push(self, *replies: Reply, path: str | None = None) -> None:
        """Queue replies for the next calls (only calls whose path ends with `path`, if given)."""
        with self._lock:
            self._script.extend((path, r) for r in replies)

    def set_default(self, reply: Reply) -> None:
        with self._lock:
            self._default = reply

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self._requests.clear()

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def last_request(self) -> RecordedRequest | None:
        with self._lock:
            return self._requests[-1] if self._requests else None

    @property
    def calls(self) -> Counter[str]:
        """Calls per request path (query string excluded)."""
        with self._lock:
            return Counter(r.path for r in self._requests)

    def call_count(self, path: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self._requests if path is None or r.path == path)

    def _next_reply(self, path: str) -> Reply:
        with self._lock:
            for i, (want, reply) in enumerate(self._script):
                if want is None or path.endswith(want):
                    del self._script[i]
                    return reply
            return self._default

    # -- serving (runs on the server thread)

    async def _models_list(self, request: web.Request) -> web.Response:
        if not request.path.endswith("/models"):
            return web.json_response(shapes.openai_error(404, "not found", None, None), status=404)
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self._models]
        return web.json_response({"object": "list", "data": data})

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        with self._lock:
            self._requests.append(record(request, body))
        if request.path.endswith("/messages/count_tokens"):
            return self._count_tokens(body)
        proto = protocol_of(request.path)
        if proto is None:
            return web.json_response(shapes.openai_error(404, "unknown path", None, None), status=404)
        try:
            payload = json.loads(body)
            assert isinstance(payload, dict)
        except (ValueError, AssertionError):
            return self._error(proto, Reply.error(400, "body is not a JSON object"))
        reply = self._next_reply(request.path)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.status >= 400:
            return self._error(proto, reply)
        if reply.raw_body is not None:
            streamed = payload.get("stream") is True
            content_type = "text/event-stream" if streamed else "application/json"
            return web.Response(body=reply.raw_body, headers={"content-type": content_type, **reply.headers})
        rid = f"fake{next(self._ids):06d}"
        model = str(payload.get("model", "fake-model"))
        if payload.get("stream") is True:
            include_usage = bool((payload.get("stream_options") or {}).get("include_usage"))
            return await self._stream(request, proto, reply, _events(proto, reply.answer, model, rid, include_usage))
        if reply.drop_after is not None:
            _abort(request)
            return web.Response()
        return web.json_response(_body(proto, reply.answer, model, rid), headers=reply.headers)

    def _count_tokens(self, body: bytes) -> web.Response:
        """Anthropic's token counting: a count that grows with the request (a stand-in for a tokenizer)."""
        payload = json.loads(body)
        if "max_tokens" in payload or "stream" in payload:
            extra = "max_tokens" if "max_tokens" in payload else "stream"
            return web.json_response(
                shapes.anthropic_error(400, f"{extra}: Extra inputs are not permitted", None), status=400
            )
        return web.json_response({"input_tokens": 3 + len(json.dumps(payload.get("messages"))) // 3})

    def _error(self, proto: Protocol, reply: Reply) -> web.Response:
        if proto == "messages":
            body = shapes.anthropic_error(reply.status, reply.error_message, reply.error_type)
        else:
            body = shapes.openai_error(reply.status, reply.error_message, reply.error_type, reply.error_code)
        return web.json_response(body, status=reply.status, headers=reply.headers)

    async def _stream(
        self, request: web.Request, proto: Protocol, reply: Reply, events: list[bytes]
    ) -> web.StreamResponse:
        if reply.drop_after == 0:
            _abort(request)
            return web.Response()
        resp = web.StreamResponse(
            headers={
                "content-type": "text/event-stream; charset=utf-8",
                "cache-control": "no-cache",
                **reply.headers,
            }
        )
        await resp.prepare(request)
        for n, event in enumerate(events):
            if reply.drop_after is not None and n == reply.drop_after:
                _abort(request)
                return resp
            if reply.error_after is not None and n == reply.error_after:
                await resp.write(_error_event(proto, reply.error_message, n, reply.error_type))
                break
            if reply.stall_after is not None and n == reply.stall_after:
                await asyncio.sleep(reply.stall_seconds)
            await resp.write(event)
            if reply.chunk_delay:
                await asyncio.sleep(reply.chunk_delay)
        await resp.write_eof()
        return resp


def _body(proto: Protocol, a: Answer, model: str, rid: str) -> dict[str, Any]:
    if proto == "chat":
        return shapes.chat_body(a, model, rid)
    if proto == "responses":
        return shapes.responses_body(a, model, rid)
    return shapes.messages_body(a, model, rid)


def _events(proto: Protocol, a: Answer, model: str, rid: str, include_usage: bool) -> list[bytes]:
    if proto == "chat":
        return shapes.chat_events(a, model, rid, include_usage)
    if proto == "responses":
        return shapes.responses_events(a, model, rid)
    return shapes.messages_events(a, model, rid)


def _error_event(proto: Protocol, message: str, sequence_number: int, error_type: str | None = None) -> bytes:
    if proto == "chat":
        return shapes.sse_data(shapes.openai_error(500, message, error_type, None))
    if proto == "responses":
        return shapes.responses_error_event(message, sequence_number)
    return shapes.anthropic_error_event(message)


def _abort(request: web.Request) -> None:
    """Cut the TCP connection without finishing the response, like a crashed upstream."""
    transport = request.transport
    if transport is not None:
        transport.abort()
