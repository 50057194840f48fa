"""A deliberately fast fake upstream for the benchmark, run as its own process.

    python bench/fake_upstream.py --port 9100 [--delay-ms 50] [--chunks 16] [--stream-mode spread]

It answers ``POST .../chat/completions``, ``.../responses`` and ``.../messages`` (any prefix and query
string) like a quick model:

- non-streaming: after `--delay-ms` (50 ms), one small JSON body in the protocol's shape, with usage
  (20 input tokens, 16 output tokens);
- streaming (``"stream": true`` in the body): `--chunks` (16) writes, one text delta each. With
  ``--stream-mode spread`` (the default) write k goes out at k/16 of the delay, so the first token
  arrives after ~3 ms and the last at 50 ms, the same total time as a non-streaming answer; with
  ``--stream-mode after`` all 16 writes go out back to back once the delay has passed; with
  ``--frame-ms F`` (spread mode) the writes are F ms apart instead, whatever the delay (a stream of
  16 writes then lasts 16 F ms; non-streaming answers still wait `--delay-ms`). The first
  write also carries the protocol's opening events and the last one its closing events: Chat's
  finish chunk, the ``choices: []`` usage chunk when ``stream_options.include_usage`` is set, and
  ``data: [DONE]``; Responses' ``response.completed`` with usage; Messages' ``message_delta`` with
  usage and ``message_stop``.

``GET /health`` answers 200. The answers are pre-rendered at start-up and the server is raw asyncio
(uvloop when installed) with the httptools parser, so it stays far from being the bottleneck at
concurrency 64. It prints ``ready <url>`` once listening and, on SIGINT/SIGTERM, one JSON line with the
requests served and the CPU seconds it used.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import httptools

MODEL = "bench-model"
INPUT_TOKENS = 20


def _data(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _event(name: str, obj: Any) -> bytes:
    return b"event: " + name.encode() + b"\n" + _data(obj)


@dataclass(frozen=True)
class Canned:
    """Pre-rendered answers of one protocol: the JSON body and the stream writes (with/without usage)."""

    body: bytes
    writes: list[bytes]
    writes_with_usage: list[bytes]


def _group(opening: list[bytes], deltas: list[bytes], closing: list[bytes]) -> list[bytes]:
    writes = list(deltas)
    writes[0] = b"".join(opening) + writes[0]
    writes[-1] = writes[-1] + b"".join(closing)
    return writes


def chat(words: list[str]) -> Canned:
    usage = {
        "prompt_tokens": INPUT_TOKENS,
        "completion_tokens": len(words),
        "total_tokens": INPUT_TOKENS + len(words),
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    head = {"id": "chatcmpl-bench", "created": 1700000000, "model": MODEL}
    body = {
        **head,
        "object": "chat.completion",
        "usage": usage,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(words)}, "finish_reason": "stop"}],
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {**head, "object": "chat.completion.chunk", "choices": [choice]}

    opening = [_data(chunk({"role": "assistant", "content": ""}))]
    deltas = [_data(chunk({"content": w})) for w in words]
    finish = _data(chunk({}, "stop"))
    usage_chunk = _data({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
    done = b"data: [DONE]\n\n"
    return Canned(
        json.dumps(body).encode(),
        _group(opening, deltas, [finish, done]),
        _group(opening, deltas, [finish, usage_chunk, done]),
    )


def responses(words: list[str]) -> Canned:
    text = "".join(words)
    usage = {
        "input_tokens": INPUT_TOKENS,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": len(words),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": INPUT_TOKENS + len(words),
    }
    item = {
        "id": "msg_bench",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    base = {
        "id": "resp_bench",
        "object": "response",
        "created_at": 1700000000,
        "model": MODEL,
        "error": None,
        "incomplete_details": None,
        "tools": [],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
    }
    final = {**base, "status": "completed", "output": [item], "usage": usage}
    started = {**base, "status": "in_progress", "output": [], "usage": None}
    seq = iter(range(1_000))
    where = {"item_id": "msg_bench", "output_index": 0, "content_index": 0}

    def ev(kind: str, **fields: Any) -> bytes:
        return _event(kind, {"type": kind, "sequence_number": next(seq), **fields})

    part = {"type": "output_text", "text": "", "annotations": []}
    opening = [
        ev("response.created", response=started),
        ev("response.in_progress", response=started),
        ev("response.output_item.added", output_index=0, item={**item, "status": "in_progress", "content": []}),
        ev("response.content_part.added", **where, part=part),
    ]
    deltas = [ev("response.output_text.delta", **where, delta=w) for w in words]
    closing = [
        ev("response.output_text.done", **where, text=text),
        ev("response.content_part.done", **where, part={**part, "text": text}),
        ev("response.output_item.done", output_index=0, item=item),
        ev("response.completed", response=final),
    ]
    writes = _group(opening, deltas, closing)
    return Canned(json.dumps(final).encode(), writes, writes)


def messages(words: list[str]) -> Canned:
    usage = {
        "input_tokens": INPUT_TOKENS,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": len(words),
    }
    head = {"id": "msg_bench", "type": "message", "role": "assistant", "model": MODEL}
    body = {
        **head,
        "content": [{"type": "text", "text": "".join(words)}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }
    start: dict[str, Any] = {
        **head,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    opening = [
        _event("message_start", {"type": "message_start", "message": start}),
        _event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        _event("ping", {"type": "ping"}),
    ]
    deltas = [
        _event(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}},
        )
        for w in words
    ]
    closing = [
        _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _event(
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": usage},
        ),
        _event("message_stop", {"type": "message_stop"}),
    ]
    writes = _group(opening, deltas, closing)
    return Canned(json.dumps(body).encode(), writes, writes)


@dataclass(frozen=True)
class Config:
    delay: float
    spread: bool
    canned: dict[bytes, Canned]
    frame: float | None = None  # seconds between stream writes (spread mode); None: the delay spread over them


def build_config(delay_ms: float, chunks: int, spread: bool, frame_ms: float | None = None) -> Config:
    words = [f"w{i} " for i in range(chunks)]
    canned = {b"/chat/completions": chat(words), b"/responses": responses(words), b"/messages": messages(words)}
    frame = frame_ms / 1000.0 if frame_ms is not None else None
    return Config(delay=delay_ms / 1000.0, spread=spread, canned=canned, frame=frame)


def _json_head(length: int, keep_alive: bool, status: bytes = b"200 OK") -> bytes:
    conn = b"" if keep_alive else b"connection: close\r\n"
    return (
        b"HTTP/1.1 "
        + status
        + b"\r\ncontent-type: application/json\r\ncontent-length: "
        + str(length).encode()
        + b"\r\n"
        + conn
        + b"\r\n"
    )


_SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\n"
_SSE_HEAD += b"transfer-encoding: chunked\r\n"


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n" % len(data) + data + b"\r\n"


class Stats:
    requests = 0


class Connection(asyncio.Protocol):
    """One keep-alive connection; requests on it are answered one after another (pipelining-safe)."""

    def __init__(self, config: Config) -> None:
        self._config = config
        self._loop = asyncio.get_running_loop()
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._url = b""
        self._body: list[bytes] = []
        self._pending: deque[tuple[bytes, bytes, bool, bytes]] = deque()
        self._busy = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's transports don't subclass it

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            self._write(_json_head(0, False, b"400 Bad Request"))
            self._close()

    # httptools callbacks
    def on_message_begin(self) -> None:
        self._url = b""
        self._body = []

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        keep_alive = self._parser.should_keep_alive()
        self._pending.append((self._parser.get_method(), self._url, keep_alive, b"".join(self._body)))
        if not self._busy:
            self._next()

    # answering
    def _next(self) -> None:
        if not self._pending or self._transport is None:
            self._busy = False
            return
        self._busy = True
        method, url, keep_alive, body = self._pending.popleft()
        Stats.requests += 1
        path = url.split(b"?", 1)[0]
        if method == b"GET" and path == b"/health":
            self._finish(_json_head(2, keep_alive) + b"{}", keep_alive)
            return
        canned = next((c for suffix, c in self._config.canned.items() if path.endswith(suffix)), None)
        if method != b"POST" or canned is None:
            self._finish(_json_head(2, keep_alive, b"404 Not Found") + b"{}", keep_alive)
            return
        try:
            request = json.loads(body) if body else {}
        except ValueError:
            request = {}
        if not isinstance(request, dict) or request.get("stream") is not True:
            self._later(
                self._config.delay, self._finish, _json_head(len(canned.body), keep_alive) + canned.body, keep_alive
            )
            return
        options = request.get("stream_options")
        usage = isinstance(options, dict) and options.get("include_usage") is True
        writes = canned.writes_with_usage if usage else canned.writes
        self._stream(writes, keep_alive)

    def _stream(self, writes: list[bytes], keep_alive: bool) -> None:
        delay = self._config.delay
        frame = self._config.frame
        step = (frame if frame is not None else delay / len(writes)) if self._config.spread else 0.0
        head = _SSE_HEAD + (b"" if keep_alive else b"connection: close\r\n") + b"\r\n"

        def send(i: int) -> None:
            data = (head if i == 0 else b"") + _chunk(writes[i])
            if i == len(writes) - 1:
                self._finish(data + b"0\r\n\r\n", keep_alive)
                return
            self._write(data)
            self._later(step, send, i + 1)

        self._later(step if self._config.spread else delay, send, 0)

    def _later(self, delay: float, fn: Callable[..., None], *args: Any) -> None:
        if delay > 0:
            self._loop.call_later(delay, fn, *args)
        else:
            fn(*args)

    def _write(self, data: bytes) -> None:
        if self._transport is not None:
            self._transport.write(data)

    def _finish(self, data: bytes, keep_alive: bool) -> None:
        self._write(data)
        if not keep_alive:
            self._close()
        self._next()

    def _close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None


async def serve(host: str, port: int, config: Config) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Connection(config), host, port, backlog=1024)
    bound = server.sockets[0].getsockname()[1]  # the real port when --port 0 asked the OS to pick
    print(f"ready http://{host}:{bound}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()
    cpu = time.process_time()
    print(json.dumps({"requests": Stats.requests, "cpu_seconds": round(cpu, 3)}), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True, help="0 lets the OS pick (printed on the ready line)")
    parser.add_argument("--delay-ms", type=float, default=50.0)
    parser.add_argument("--chunks", type=int, default=16)
    parser.add_argument("--stream-mode", choices=["spread", "after"], default="spread")
    parser.add_argument("--frame-ms", type=float, default=None, help="ms between stream writes (spread mode)")
    args = parser.parse_args(argv)
    if args.chunks < 1:
        parser.error("--chunks must be at least 1")
    config = build_config(args.delay_ms, args.chunks, args.stream_mode == "spread", args.frame_ms)
    try:
        import uvloop

        runner: Callable[..., Any] = uvloop.run
    except ImportError:
        runner = asyncio.run
    runner(serve(args.host, args.port, config))


if __name__ == "__main__":
    main()
