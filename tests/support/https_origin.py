"""A local HTTPS origin with a test CA (trustme), for the SSRF-safe fetcher and asset registration tests.

It runs in the test's event loop and counts TCP connections as well as requests, so a test can show
that a refused URL caused no connection attempt at all. Routes:

- `GET /f/{name}`                 a registered body (`serve(name, data, content_type)`)
- `GET /redirect?to=URL[&n=K]`    302 to `to` (after K-1 more hops to itself when n > 1)
- `GET /slow?seconds=S`           sends a few bytes, then stalls S seconds
- `GET /endless`                  an endless chunked body
- `GET /big?bytes=N`              N bytes with a Content-Length
- `GET /liar?bytes=N`             N bytes, no Content-Length (chunked)
- `GET /status/{code}`            that status
- `POST /hook`                    records the body and headers, answers 204
"""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
from pathlib import Path

import trustme
from aiohttp import web
from aiohttp.typedefs import Handler


@dataclasses.dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class HttpsOrigin:
    def __init__(self, ca: trustme.CA, directory: Path) -> None:
        self.ca = ca
        self.ca_file = directory / "test-ca.pem"
        ca.cert_pem.write_to_path(str(self.ca_file))
        self.bodies: dict[str, tuple[bytes, str]] = {}
        self.requests: list[Seen] = []
        self.connections = 0
        self.port = 0
        self.http_port = 0  # the same routes over plain http (for allow-listed http tests)
        self._runner: web.AppRunner | None = None
        self._server: asyncio.AbstractServer | None = None
        self._plain: asyncio.AbstractServer | None = None

    @property
    def base(self) -> str:
        return f"https://localhost:{self.port}"

    def serve(self, name: str, data: bytes, content_type: str = "application/octet-stream") -> str:
        self.bodies[name] = (data, content_type)
        return f"{self.base}/f/{name}"

    def seen_paths(self) -> list[str]:
        return [r.path for r in self.requests]

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/f/{name}", self._file)
        app.router.add_get("/redirect", self._redirect)
        app.router.add_get("/slow", self._slow)
        app.router.add_get("/endless", self._endless)
        app.router.add_get("/big", self._big)
        app.router.add_get("/liar", self._liar)
        app.router.add_get("/status/{code}", self._status)
        app.router.add_post("/hook", self._hook)
        app.middlewares.append(self._record)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ca.issue_cert("localhost", "127.0.0.1", "::1").configure_cert(server_ctx)
        factory = self._runner.server
        assert factory is not None

        def counting() -> asyncio.Protocol:
            self.connections += 1
            return factory()

        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(counting, "127.0.0.1", 0, ssl=server_ctx)
        self.port = self._server.sockets[0].getsockname()[1]
        self._plain = await loop.create_server(counting, "127.0.0.1", 0)
        self.http_port = self._plain.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        for server in (self._server, self._plain):
            if server is not None:
                server.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @web.middleware
    async def _record(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        body = await request.read() if request.can_read_body else b""
        self.requests.append(Seen(request.method, request.path_qs, dict(request.headers), body))
        response: web.StreamResponse = await handler(request)
        return response

    async def _file(self, request: web.Request) -> web.Response:
        found = self.bodies.get(request.match_info["name"])
        if found is None:
            raise web.HTTPNotFound()
        data, content_type = found
        return web.Response(body=data, content_type=content_type)

    async def _redirect(self, request: web.Request) -> web.Response:
        target = request.query["to"]
        hops = int(request.query.get("n", "1"))
        if hops > 1:
            target = str(request.url.with_query({"to": target, "n": str(hops - 1)}))
        return web.Response(status=int(request.query.get("status", "302")), headers={"Location": target})

    async def _slow(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "image/png"})
        await resp.prepare(request)
        await resp.write(b"\x89PNG")
        await asyncio.sleep(float(request.query.get("seconds", "30")))
        return resp

    async def _endless(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "video/mp4"})
        await resp.prepare(request)
        chunk = b"\0" * 65536
        while True:
            await resp.write(chunk)

    async def _big(self, request: web.Request) -> web.StreamResponse:
        total = int(request.query["bytes"])
        resp = web.StreamResponse(headers={"Content-Type": "video/mp4"})
        resp.content_length = total  # declared up front; the bytes follow in chunks, never all in memory
        await resp.prepare(request)
        while total > 0:
            n = min(total, 65536)
            await resp.write(b"\0" * n)
            total -= n
        return resp

    async def _liar(self, request: web.Request) -> web.StreamResponse:
        total = int(request.query["bytes"])
        resp = web.StreamResponse(headers={"Content-Type": "video/mp4"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        while total > 0:
            n = min(total, 65536)
            await resp.write(b"\0" * n)
            total -= n
        await resp.write_eof()
        return resp

    async def _status(self, request: web.Request) -> web.Response:
        return web.Response(status=int(request.match_info["code"]), text="nope")

    async def _hook(self, request: web.Request) -> web.Response:
        return web.Response(status=204)
