"""A local HTTP server that replays one recorded cassette of real upstream traffic.

Point an upstream's base URL at it and it answers ``POST /v1/chat/completions``, ``/v1/responses`` and
``/v1/messages`` (query strings such as ``?beta=true`` accepted) with the recorded status,
content type and body: JSON bodies re-serialised from ``parsed_body`` (the cassettes keep no exact
bytes for them), SSE bodies byte for byte, written one event per chunk. It records every request
it gets, so a test can assert what the gateway sent upstream::

    with ReplayUpstream("openai_chat/test_dbos_model_stream_direct") as up:
        ... configure an upstream with base_url=up.base_url + "/v1" and call the gateway ...
        assert up.requests[0].json["model"] == "gpt-4o"
        up.assert_all_served()

Interactions are served in recorded order: a request gets the next unserved interaction with the
same path (``match="body"`` instead picks the unserved one whose recorded JSON body equals the
request's, ignoring `model`). A request with nothing left to serve is answered 500 and listed in
`misses`. The image downloads (GET) some cassettes start with are skipped unless
`include_downloads` is set; then they are served at their original URL path (`url_for`).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from aiohttp import web

from tests.support.cassettes import CASSETTES_DIR, Interaction, load_cassette
from tests.support.fake_upstream import RecordedRequest, ServerThread, ThreadedServer, record

__all__ = ["ReplayUpstream", "cassette_path"]

# Hop-by-hop or body-framing headers: the replay server frames the body itself.
_DROPPED_HEADERS = {"content-length", "transfer-encoding", "connection", "content-encoding", "keep-alive"}


def cassette_path(name: str | Path) -> Path:
    """A cassette by path, or by name under the pydantic-ai folder (``openai_chat/test_valid_response``)."""
    path = Path(name)
    if path.is_file():
        return path
    candidate = CASSETTES_DIR / (str(name) if str(name).endswith(".yaml") else f"{name}.yaml")
    if not candidate.is_file():
        raise FileNotFoundError(f"no cassette {name!r} under {CASSETTES_DIR}")
    return candidate


class ReplayUpstream(ThreadedServer):
    """Replays one cassette; see the module docstring."""

    def __init__(
        self,
        cassette: str | Path | Sequence[Interaction],
        *,
        match: Literal["order", "body"] = "order",
        include_downloads: bool = False,
        chunk_delay: float = 0.0,
    ) -> None:
        loaded = load_cassette(cassette_path(cassette)) if isinstance(cassette, str | Path) else cassette
        self.interactions: tuple[Interaction, ...] = tuple(
            it for it in loaded if include_downloads or it.method == "POST"
        )
        self._match = match
        self._chunk_delay = chunk_delay
        self._lock = threading.Lock()
        self._unserved = list(self.interactions)
        self._served: list[Interaction] = []
        self._requests: list[RecordedRequest] = []
        self._misses: list[RecordedRequest] = []
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._server = ServerThread(app, name="replay-upstream")

    # -- inspection (test thread)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def served(self) -> list[Interaction]:
        """Interactions answered so far, in the order they were served."""
        with self._lock:
            return list(self._served)

    @property
    def misses(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._misses)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._unserved)

    def assert_all_served(self) -> None:
        with self._lock:
            assert not self._misses, f"requests with no recorded answer: {[m.path for m in self._misses]}"
            assert not self._unserved, f"interactions never requested: {[i.id for i in self._unserved]}"

    def url_for(self, interaction: Interaction) -> str:
        """Where a served interaction lives on this server (for the recorded image downloads)."""
        return self.base_url + interaction.path

    # -- serving (server thread)

    def _take(self, req: RecordedRequest) -> Interaction | None:
        with self._lock:
            self._requests.append(req)
            for i, it in enumerate(self._unserved):
                if it.method == req.method and _same_path(it.path, req.path) and self._body_matches(it, req):
                    self._served.append(it)
                    return self._unserved.pop(i)
            self._misses.append(req)
            return None

    def _body_matches(self, it: Interaction, req: RecordedRequest) -> bool:
        if self._match == "order":
            return True
        try:
            got = req.json
        except ValueError:
            return False
        return bool(_without_model(got) == _without_model(it.request_json))

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        it = self._take(record(request, await request.read()))
        if it is None:
            message = f"replay upstream: no recorded interaction left for {request.method} {request.path}"
            return web.json_response({"error": {"message": message, "type": "replay_miss"}}, status=500)
        headers = {k: v[-1] for k, v in it.response_headers.items() if v and k.lower() not in _DROPPED_HEADERS}
        if it.response_json is not None:
            body = json.dumps(it.response_json, ensure_ascii=False).encode()
            headers.setdefault("content-type", "application/json")
            return web.Response(status=it.status, body=body, headers=headers)
        raw = it.response_raw if it.response_raw is not None else b""
        if isinstance(raw, str) and it.is_sse:
            return await self._stream(request, it.status, headers, raw)
        return web.Response(status=it.status, body=raw.encode() if isinstance(raw, str) else raw, headers=headers)

    async def _stream(self, request: web.Request, status: int, headers: dict[str, str], raw: str) -> web.StreamResponse:
        resp = web.StreamResponse(status=status, headers=headers)
        await resp.prepare(request)
        for event in split_events(raw):
            await resp.write(event.encode())
            if self._chunk_delay:
                await asyncio.sleep(self._chunk_delay)
        await resp.write_eof()
        return resp


def split_events(raw: str) -> list[str]:
    """The SSE body cut after each blank line; the pieces concatenate back to `raw` exactly."""
    pieces: list[str] = []
    start = 0
    while (end := raw.find("\n\n", start)) != -1:
        pieces.append(raw[start : end + 2])
        start = end + 2
    if start < len(raw):
        pieces.append(raw[start:])
    return pieces


def _same_path(recorded: str, got: str) -> bool:
    # A gateway may configure a base URL with a prefix; the recorded path is then a suffix.
    return got == recorded or got.endswith(recorded)


def _without_model(body: Any) -> Any:
    if isinstance(body, dict):
        return {k: v for k, v in body.items() if k != "model"}
    return body
