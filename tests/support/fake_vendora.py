"""A local fake of the vendorA asset API (see docs/api/assets.md, "vendorA upstream"), run in the test's loop,
and of its video generation API (`POST /v1/videos` → `{"id", "status": "Queued"}`, `GET /v1/videos/{id}` →
`Running`, then `Succeeded` with `video.url`, or `Failed` with `error` when the prompt says `fail`;
the video itself at `GET /files/{name}`, set with `video_bytes`).

Behaviour is set per test through attributes: `fail_next` answers that many calls with 503 first,
`delay` stalls every answer, `reject` answers uploads with 422, `status_after_polls` decides when a
`Processing` asset turns `Active` (or `Failed` when `fail_assets`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets

from aiohttp import BodyPartReader, web

API_KEY = "vendora-test-key"


@dataclasses.dataclass
class Call:
    method: str
    path: str
    idempotency_key: str | None
    fields: dict[str, str]
    file_size: int | None


class FakeVendorA:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.assets: dict[str, dict[str, object]] = {}
        self.by_key: dict[str, str] = {}
        self.fail_next = 0
        self.delay = 0.0
        self.reject = False
        self.fail_assets = False
        self.status_after_polls = 1
        self.port = 0
        self.video_bytes = b""
        self.videos: dict[str, dict[str, object]] = {}  # job id -> the body it was submitted with
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        app = web.Application(client_max_size=300 * 1024 * 1024)
        app.router.add_post("/v1/assets", self._create)
        app.router.add_get("/v1/assets/{id}", self._get)
        app.router.add_delete("/v1/assets/{id}", self._delete)
        app.router.add_post("/v1/videos", self._video_create)
        app.router.add_get("/v1/videos/{id}", self._video_get)
        app.router.add_get("/files/{name}", self._file)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None and isinstance(server, asyncio.base_events.Server)
        self.port = server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _gate(self, request: web.Request) -> web.Response | None:
        if self.delay:
            await asyncio.sleep(self.delay)
        if request.headers.get("Authorization") != f"Bearer {API_KEY}":
            return web.json_response({"error": {"message": "bad key"}}, status=401)
        if self.fail_next > 0:
            self.fail_next -= 1
            return web.json_response({"error": {"message": "overloaded"}}, status=503)
        return None

    async def _create(self, request: web.Request) -> web.Response:
        fields: dict[str, str] = {}
        size: int | None = None
        async for part in await request.multipart():
            assert isinstance(part, BodyPartReader)
            if part.name == "file":
                size = len(await part.read())
            elif part.name:
                fields[part.name] = await part.text()
        key = request.headers.get("Idempotency-Key")
        self.calls.append(Call("POST", request.path, key, fields, size))
        if (refused := await self._gate(request)) is not None:
            return refused
        if self.reject:
            return web.json_response({"error": {"message": "content policy: rejected"}}, status=422)
        if key is not None and key in self.by_key:
            return web.json_response(self.assets[self.by_key[key]])
        asset_id = "va-" + secrets.token_hex(6)
        self.assets[asset_id] = {"id": asset_id, "status": "Processing", "polls": 0}
        if key is not None:
            self.by_key[key] = asset_id
        return web.json_response({"id": asset_id, "status": "Processing"}, status=201)

    async def _get(self, request: web.Request) -> web.Response:
        self.calls.append(Call("GET", request.path, None, {}, None))
        if (refused := await self._gate(request)) is not None:
            return refused
        asset = self.assets.get(request.match_info["id"])
        if asset is None:
            return web.json_response({"error": {"message": "no such asset"}}, status=404)
        polls = int(str(asset["polls"])) + 1
        asset["polls"] = polls
        if polls >= self.status_after_polls and asset["status"] == "Processing":
            asset["status"] = "Failed" if self.fail_assets else "Active"
            if self.fail_assets:
                asset["reason"] = "moderation: not allowed"
        return web.json_response({k: v for k, v in asset.items() if k != "polls"})

    async def _delete(self, request: web.Request) -> web.Response:
        self.calls.append(Call("DELETE", request.path, None, {}, None))
        if (refused := await self._gate(request)) is not None:
            return refused
        self.assets.pop(request.match_info["id"], None)
        return web.Response(status=204)

    async def _video_create(self, request: web.Request) -> web.Response:
        if (refused := await self._gate(request)) is not None:
            return refused
        body = await request.json()
        job = "vid-" + secrets.token_hex(6)
        self.videos[job] = {**body, "_polls": 0}
        return web.json_response({"id": job, "status": "Queued"}, status=201)

    async def _video_get(self, request: web.Request) -> web.Response:
        if (refused := await self._gate(request)) is not None:
            return refused
        job = self.videos.get(request.match_info["id"])
        if job is None:
            return web.json_response({"error": {"message": "no such video"}}, status=404)
        polls = int(str(job["_polls"])) + 1
        job["_polls"] = polls
        if polls < 2:
            return web.json_response({"id": request.match_info["id"], "status": "Running"})
        if "fail" in str(job.get("prompt", "")):
            return web.json_response(
                {"id": request.match_info["id"], "status": "Failed", "error": "blocked by moderation"}
            )
        url = f"{self.base_url}/files/{request.match_info['id']}.mp4"
        return web.json_response({"id": request.match_info["id"], "status": "Succeeded", "video": {"url": url}})

    async def _file(self, request: web.Request) -> web.Response:
        return web.Response(body=self.video_bytes, content_type="video/mp4")
