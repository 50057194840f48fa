"""The floor of modelport's stack: a minimal reverse proxy on the same ASGI server and upstream client.

    python bench/bare_proxy.py --upstream http://127.0.0.1:9100 --port 0 [--workers 2]

uvicorn (uvloop + httptools, access log off) serving a raw ASGI callable (no Starlette, no routing, no auth,
no parsing of the body) that forwards each POST to the same path on `--upstream` over one pooled aiohttp
session per process (the connector settings of `modelport.upstreams.pool`) and relays the answer: the whole
body, or an SSE stream chunk by chunk as aiohttp reads it (`iter_any`, one ASGI write per upstream read).
Whatever modelport costs above this proxy is modelport's own; what this proxy costs above a direct call is
the price of the server and client libraries. With `--workers N` it runs N processes on one inherited socket
(as `modelport serve --workers N` does). Prints ``ready <url>`` once listening.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import uvicorn

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_FORWARDED = (b"content-type", b"authorization")


class BareProxy:
    def __init__(self, upstream: str) -> None:
        self._upstream = upstream.rstrip("/")
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, keepalive_timeout=60)
            self._session = aiohttp.ClientSession(connector=connector, auto_decompress=True, trust_env=False)
        return self._session

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    if self._session is not None:
                        await self._session.close()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        parts = []
        more = True
        while more:
            message = await receive()
            parts.append(message.get("body", b""))
            more = message.get("more_body", False)
        headers = {k.decode(): v.decode() for k, v in scope["headers"] if k in _FORWARDED}
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=300)
        async with self._client().post(
            self._upstream + scope["path"], data=b"".join(parts), headers=headers, timeout=timeout
        ) as response:
            out_headers = [(b"content-type", response.headers.get("content-type", "application/json").encode())]
            if "text/event-stream" not in out_headers[0][1].decode():
                payload = await response.read()
                out_headers.append((b"content-length", str(len(payload)).encode()))
                await send({"type": "http.response.start", "status": response.status, "headers": out_headers})
                await send({"type": "http.response.body", "body": payload})
                return
            await send({"type": "http.response.start", "status": response.status, "headers": out_headers})
            async for chunk in response.content.iter_any():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})


def _serve(upstream: str, sock: socket.socket) -> None:
    config = uvicorn.Config(
        BareProxy(upstream),
        loop="uvloop",
        http="httptools",
        lifespan="on",
        log_config=None,
        access_log=False,
        server_header=False,
        date_header=False,
    )
    uvicorn.Server(config).run(sockets=[sock])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True, help="0 lets the OS pick (printed on the ready line)")
    parser.add_argument("--upstream", required=True, help="base URL; the request path is appended")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(2048)
    sock.set_inheritable(True)
    print(f"ready http://{args.host}:{sock.getsockname()[1]}", flush=True)
    if args.workers <= 1:
        _serve(args.upstream, sock)
        return
    ctx = multiprocessing.get_context("spawn")
    children = [ctx.Process(target=_serve, args=(args.upstream, sock)) for _ in range(args.workers)]
    for child in children:
        child.start()

    def forward(sig: int, _frame: object) -> None:
        for child in children:
            if child.is_alive() and child.pid is not None:
                os.kill(child.pid, sig)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for child in children:
        child.join()


if __name__ == "__main__":
    main()
