"""A local fake of hosted media providers, run as a real HTTP server in the test's event loop.

One server speaks the OpenAI-compatible media API (`/v1/images/generations`, `/v1/images/edits`,
`/v1/audio/speech`) and a Replicate-style submit-and-poll API (`POST /v1/predictions` with `{"input": ...}`,
`GET /v1/predictions/{id}`), and serves the output files (`/files/...`). What a call does is decided by a
word in the prompt (or speech text), so tests can run side by side on one server:

- `fail`: the provider refuses (OpenAI kinds: 400 with an error body) or the job ends `failed`;
- `crash`: the OpenAI kinds answer 500 every time;
- `busy`: the first two calls of that task are answered 429 with `Retry-After: 1`;
- `never`: the call never answers (OpenAI kinds) or the job stays `processing`;
- `private`: the output URL points at `localhost` (the same fake, but a loopback address by name);
- `hold`: the job takes `hold_seconds` (for the concurrency limit), and anything else succeeds at once.
A job still processing reports `progress` (10 per poll, at most 90); `POST /v1/predictions/{id}/cancel`
cancels a job (recorded in `seen`; its next poll answers `canceled`).
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import io
import secrets
import time
from typing import Any

from aiohttp import web
from PIL import Image

API_KEY = "media-provider-test-key"


def png(width: int = 64, height: int = 48, color: tuple[int, int, int] = (200, 90, 40)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, "PNG")
    return out.getvalue()


@dataclasses.dataclass
class Seen:
    path: str
    at: float
    status: int
    authorization: str | None
    body: Any


@dataclasses.dataclass
class Job:
    id: str
    prompt: str
    input: dict[str, Any]
    done_at: float
    polls: int = 0
    cancelled: bool = False


class FakeMediaProvider:
    def __init__(self, *, speech_bytes: bytes, video_bytes: bytes, hold_seconds: float = 1.0) -> None:
        self.seen: list[Seen] = []
        self.jobs: dict[str, Job] = {}
        self.speech_bytes = speech_bytes
        self.video_bytes = video_bytes
        self.hold_seconds = hold_seconds
        # `hold` jobs submitted and not yet reported finished, now and at most.
        self.active = 0
        self.max_active = 0
        self.port = 0
        self._busy: dict[str, int] = {}
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def calls(self, path_part: str, word: str | None = None) -> list[Seen]:
        return [s for s in self.seen if path_part in s.path and (word is None or word in str(s.body))]

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/images/generations", self._generate)
        app.router.add_post("/v1/images/edits", self._edit)
        app.router.add_post("/v1/audio/speech", self._speech)
        app.router.add_post("/v1/predictions", self._submit)
        app.router.add_get("/v1/predictions/{id}", self._poll)
        app.router.add_post("/v1/predictions/{id}/cancel", self._cancel)
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

    # -- helpers ------------------------------------------------------------------------------------------

    def _record(self, request: web.Request, status: int, body: Any) -> None:
        self.seen.append(Seen(request.path, time.monotonic(), status, request.headers.get("Authorization"), body))

    def _limited(self, word_source: str, key: str) -> bool:
        """`busy` tasks: their first two calls are 429."""
        if "busy" not in word_source:
            return False
        count = self._busy.get(key, 0)
        self._busy[key] = count + 1
        return count < 2

    def _output_url(self, prompt: str, name: str) -> str:
        if "private" in prompt:  # https and a name, so only the address it resolves to is wrong
            return f"https://localhost:{self.port}/files/{name}"
        return f"http://{self.host}/files/{name}"

    @staticmethod
    def _too_many() -> web.Response:
        return web.json_response({"error": {"message": "rate limited"}}, status=429, headers={"Retry-After": "1"})

    async def _openai(self, request: web.Request, prompt: str, body: Any) -> web.Response | None:
        """The shared behaviours of the synchronous OpenAI kinds; None: go on and answer."""
        if request.headers.get("Authorization") != f"Bearer {API_KEY}":
            self._record(request, 401, body)
            return web.json_response({"error": {"message": "bad key"}}, status=401)
        if self._limited(prompt, prompt):
            self._record(request, 429, body)
            return self._too_many()
        if "crash" in prompt:
            self._record(request, 500, body)
            return web.json_response({"error": {"message": "internal error"}}, status=500)
        self._record(request, 200, body)
        if "fail" in prompt:
            return web.json_response(
                {"error": {"message": "your request was rejected by the safety system"}}, status=400
            )
        if "never" in prompt:
            await asyncio.sleep(3600)
        return None

    # -- OpenAI-compatible --------------------------------------------------------------------------------

    async def _generate(self, request: web.Request) -> web.Response:
        body = await request.json()
        prompt = str(body.get("prompt", ""))
        early = await self._openai(request, prompt, body)
        if early is not None:
            return early
        n = int(body.get("n", 1))
        if "private" in prompt or "url" in prompt:
            data = [{"url": self._output_url(prompt, f"gen-{i}.png")} for i in range(n)]
        else:
            data = [{"b64_json": base64.b64encode(png(64 + i, 48)).decode()} for i in range(n)]
        return web.json_response({"created": int(time.time()), "data": data})

    async def _edit(self, request: web.Request) -> web.Response:
        form = await request.post()
        image = form.get("image")
        prompt = str(form.get("prompt", ""))
        body = {k: (v if isinstance(v, str) else f"<file {getattr(v, 'filename', '')}>") for k, v in form.items()}
        early = await self._openai(request, prompt, body)
        if early is not None:
            return early
        assert isinstance(image, web.FileField)
        source = Image.open(io.BytesIO(image.file.read()))
        edited = Image.new("RGB", source.size, (10, 200, 10))
        out = io.BytesIO()
        edited.save(out, "PNG")
        return web.json_response({"data": [{"b64_json": base64.b64encode(out.getvalue()).decode()}]})

    async def _speech(self, request: web.Request) -> web.Response:
        body = await request.json()
        early = await self._openai(request, str(body.get("input", "")), body)
        if early is not None:
            return early
        return web.Response(body=self.speech_bytes, content_type="audio/mpeg")

    # -- submit and poll ----------------------------------------------------------------------------------

    async def _submit(self, request: web.Request) -> web.Response:
        body = await request.json()
        provider_input = body.get("input", {})
        prompt = str(provider_input.get("prompt", ""))
        if self._limited(prompt, "submit:" + prompt):
            self._record(request, 429, body)
            return self._too_many()
        self._record(request, 201, body)
        job = Job(
            secrets.token_hex(8),
            prompt,
            provider_input,
            time.monotonic() + (self.hold_seconds if "hold" in prompt else 0.3),
        )
        self.jobs[job.id] = job
        if "hold" in prompt:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        return web.json_response(
            {"id": job.id, "status": "starting", "urls": {"get": f"/v1/predictions/{job.id}"}}, status=201
        )

    async def _poll(self, request: web.Request) -> web.Response:
        job = self.jobs.get(request.match_info["id"])
        if job is None:
            return web.json_response({"detail": "not found"}, status=404)
        job.polls += 1
        if self._limited(job.prompt, "poll:" + job.id):
            self._record(request, 429, None)
            return self._too_many()
        self._record(request, 200, None)
        if job.cancelled:
            return web.json_response({"id": job.id, "status": "canceled"})
        if "never" in job.prompt or time.monotonic() < job.done_at:
            # Progress as fal and Replicate-style APIs report it: rising with each poll, short of done.
            return web.json_response({"id": job.id, "status": "processing", "progress": min(90, job.polls * 10)})
        if job.done_at != 0:  # first terminal answer: the job no longer runs
            if "hold" in job.prompt:
                self.active -= 1
            job.done_at = 0
        if "fail" in job.prompt:
            return web.json_response({"id": job.id, "status": "failed", "error": "the model crashed on this input"})
        name = "clip.mp4" if "video" in job.prompt else "still.png"
        return web.json_response({"id": job.id, "status": "succeeded", "output": [self._output_url(job.prompt, name)]})

    async def _cancel(self, request: web.Request) -> web.Response:
        job = self.jobs.get(request.match_info["id"])
        self._record(request, 200 if job is not None else 404, None)
        if job is None:
            return web.json_response({"detail": "not found"}, status=404)
        job.cancelled = True
        return web.json_response({"id": job.id, "status": "canceled"})

    async def _file(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self._record(request, 200, None)
        if name.endswith(".mp4"):
            return web.Response(body=self.video_bytes, content_type="video/mp4")
        return web.Response(body=png(80, 60, (30, 60, 200)), content_type="image/png")
