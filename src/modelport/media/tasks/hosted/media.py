"""Tasks of hosted media providers (a catalog entry's `upstream`): the checks at creation, and the run.

A run holds one of the provider's concurrency slots (`slots.py`, shared by every worker process), makes the
kind's calls through `ProviderClient`, and turns what comes back into result files: inline bytes (OpenAI
`b64_json`, a speech body) or output URLs downloaded through the SSRF-safe fetcher (a URL at a private
address is refused and the task fails, refunded). The caller stores the files, exactly as for embedded
models, so results always live in our store with our expiry.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import logging
from collections.abc import Callable
from typing import Any

import aiohttp
import jmespath
import jmespath.exceptions
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.catalog_spec import HostedProvider, MediaModel
from modelport.errors import InvalidParameters
from modelport.media.assets.refs import is_asset_ref, resolve_asset_ref
from modelport.media.files.detect import SNIFF_BYTES, detect_media
from modelport.media.files.storage import FileStore
from modelport.media.tasks.hosted.client import ProviderClient, ProviderFailed
from modelport.media.tasks.hosted.slots import provider_slot
from modelport.media.tasks.inputs import InputUnavailable, check_input_url, media_kinds, read_input
from modelport.media.tasks.models.base import RenderedFile
from modelport.media.tasks.rows import TaskRow
from modelport.net import FetchError, SafeFetcher

log = logging.getLogger("modelport.media.hosted")

# The largest output file downloaded from a provider, and how long one download may take.
MAX_OUTPUT_BYTES = 200 * 1024 * 1024
OUTPUT_FETCH_SECONDS = 120.0
# A provider's cancel call, made when a task stops, may take this long (it never delays the refund).
CANCEL_CALL_SECONDS = 10.0


def units(model: MediaModel, params: dict[str, Any]) -> int:
    """Billing units of a hosted task, from its input: `n` images (default 1), `duration` seconds
    (default 5), the characters of `text`; a `task`-priced model counts one."""
    if model.price_unit == "image":
        return int(params.get("n", 1))
    if model.price_unit == "second":
        return int(params.get("duration", 5))
    if model.price_unit == "1k_characters":
        return len(str(params.get("text", "")))
    return 1


async def check_inputs(
    engine: AsyncEngine, fetcher: SafeFetcher, team_id: str, provider: HostedProvider, params: dict[str, Any]
) -> None:
    """At creation: each media field must be usable (400 naming the field), `asset://` of an active asset of
    the team that the provider's asset library holds (for `asset_fields`)."""
    for field in provider.asset_fields:
        value = params.get(field)
        if isinstance(value, str):
            await check_input_url(fetcher, engine, team_id, field, value, provider=provider)
    for field in provider.url_fields:
        if field in params and field not in provider.asset_fields:
            await check_input_url(fetcher, engine, team_id, field, params[field])


def _report(progress: Callable[[float], None], value: Any) -> None:
    """A provider's progress, 0-100 or a 0-1 fraction, as a fraction; anything else is ignored."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    fraction = value if value <= 1 else value / 100
    if 0 <= fraction <= 1:
        progress(float(fraction))


def _search(path: str, document: Any) -> Any:
    try:
        return jmespath.search(path, document)
    except jmespath.exceptions.JMESPathError as exc:  # a catalog mistake: say where
        raise ProviderFailed("upstream_error", f"the catalog's JSON path {path!r} is not valid: {exc}") from exc


class HostedMedia:
    def __init__(self, *, engine: AsyncEngine, fetcher: SafeFetcher, store: FileStore, lease_seconds: float) -> None:
        self._engine = engine
        self._fetcher = fetcher
        self._store = store
        self._lease_seconds = lease_seconds
        self._session: aiohttp.ClientSession | None = None

    def _client(self, provider: HostedProvider) -> ProviderClient:
        if self._session is None or self._session.closed:
            # No total timeout here: each call sets the provider's own; environment proxies are not used.
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
        return ProviderClient(provider, self._session)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def run(
        self, model: MediaModel, task: TaskRow, progress: Callable[[float], None] | None = None
    ) -> list[RenderedFile]:
        """`progress` gets the provider's reported progress (a 0-1 fraction) where it reports one."""
        provider = model.upstream
        assert provider is not None
        async with provider_slot(
            self._engine, provider.name, provider.max_concurrency, task.id, lease_seconds=self._lease_seconds
        ):
            client = self._client(provider)
            if provider.kind == "openai_images":
                return await self._openai_images(client, task)
            if provider.kind == "openai_image_edits":
                return await self._openai_edits(client, task)
            if provider.kind == "openai_speech":
                return await self._openai_speech(client, task)
            return await self._submit_poll(client, task, progress)

    # -- OpenAI-compatible --------------------------------------------------------------------------------

    async def _openai_images(self, client: ProviderClient, task: TaskRow) -> list[RenderedFile]:
        body = {**task.input, "model": client.provider.model}
        answer = await client.call("POST", "/images/generations", json=body)
        return await self._image_items(answer.json())

    async def _openai_edits(self, client: ProviderClient, task: TaskRow) -> list[RenderedFile]:
        form = aiohttp.FormData()
        if client.provider.model:
            form.add_field("model", client.provider.model)
        for name, value in task.input.items():
            if name in client.provider.url_fields:
                try:
                    data = await read_input(self._fetcher, self._engine, self._store, task.team_id, name, str(value))
                except InputUnavailable as exc:
                    raise ProviderFailed("input_unavailable", exc.message) from exc
                detected = detect_media(data[:SNIFF_BYTES])
                ext = detected.extension if detected is not None else "png"
                mime = detected.mime_type if detected is not None else "application/octet-stream"
                form.add_field("image", data, filename=f"{name}.{ext}", content_type=mime)
            else:
                form.add_field(name, str(value))
        answer = await client.call("POST", "/images/edits", form=form)
        return await self._image_items(answer.json())

    async def _image_items(self, document: Any) -> list[RenderedFile]:
        items = document.get("data") if isinstance(document, dict) else None
        if not isinstance(items, list) or not items:
            raise ProviderFailed("upstream_error", "the provider's answer has no images (`data` is empty)")
        files = []
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("b64_json"), str):
                try:
                    data = base64.b64decode(item["b64_json"], validate=True)
                except (binascii.Error, ValueError) as exc:
                    raise ProviderFailed("upstream_error", "the provider's b64_json is not base64") from exc
                files.append(await self._as_file(data))
            elif isinstance(item, dict) and isinstance(item.get("url"), str):
                files.append(await self._download(item["url"]))
            else:
                raise ProviderFailed("upstream_error", "an image in the provider's answer has neither b64_json nor url")
        return files

    async def _openai_speech(self, client: ProviderClient, task: TaskRow) -> list[RenderedFile]:
        params = task.input
        body: dict[str, Any] = {
            "model": client.provider.model,
            "input": params.get("text", ""),
            "voice": params.get("voice", client.provider.voice or "alloy"),
            "response_format": params.get("format", "mp3"),
        }
        if "speed" in params:
            body["speed"] = params["speed"]
        answer = await client.call("POST", "/audio/speech", json=body)
        return [await self._as_file(answer.body)]

    # -- submit and poll ----------------------------------------------------------------------------------

    async def _provider_input(self, provider: HostedProvider, task: TaskRow) -> dict[str, Any]:
        """The task's input with each `asset://` in an asset field replaced by the provider's own reference."""
        out = dict(task.input)
        for field in provider.asset_fields:
            value = out.get(field)
            if isinstance(value, str) and is_asset_ref(value):
                try:
                    record = await resolve_asset_ref(
                        self._engine, task.team_id, value, field=field, kinds=media_kinds(field)
                    )
                except InvalidParameters as exc:  # deleted or failed since the task was created
                    raise ProviderFailed("input_unavailable", str(exc)) from exc
                if record.upstream_id is None:
                    raise ProviderFailed("input_unavailable", f"{field}: asset {record.id!r} has no provider reference")
                out[field] = provider.asset_ref_format.format(upstream_id=record.upstream_id, asset_id=record.id)
        return out

    async def _submit_poll(
        self, client: ProviderClient, task: TaskRow, progress: Callable[[float], None] | None = None
    ) -> list[RenderedFile]:
        provider = client.provider
        provider_input = await self._provider_input(provider, task)
        payload: dict[str, Any] = dict(provider.extra_body)
        if provider.input_field:
            payload[provider.input_field] = provider_input
        else:
            payload.update(provider_input)
        document = (await client.call("POST", provider.submit_path, json=payload)).json()
        job_id = _search(provider.id_path, document)
        if not isinstance(job_id, (str, int)) or str(job_id) == "":
            raise ProviderFailed("upstream_error", f"the provider's submit answer has no id at {provider.id_path!r}")
        job = str(job_id)
        log.info("task %s: provider %s job %s submitted", task.id, provider.name, job)
        delay = provider.poll_initial_seconds
        try:
            while True:
                status = _search(provider.status_field, document)
                if status in provider.success_values:
                    break
                if status in provider.failure_values:
                    reason = _search(provider.error_path, document) if provider.error_path else None
                    detail = f": {str(reason)[:300]}" if reason else ""
                    raise ProviderFailed(
                        "upstream_failed", f"provider {provider.name} reports the job {status}{detail}"
                    )
                if progress is not None and provider.progress_path:
                    _report(progress, _search(provider.progress_path, document))
                await asyncio.sleep(delay)
                delay = min(delay * 2, provider.poll_max_seconds)
                document = (await client.call("GET", provider.status_path.replace("{id}", job))).json()
        except asyncio.CancelledError:
            # The task was cancelled, passed its deadline or was taken over: stop the provider's job too.
            if provider.cancel_path:
                await asyncio.shield(self._cancel_job(client, task, job))
            raise
        if provider.result_path is not None:
            document = (await client.call("GET", provider.result_path.replace("{id}", job))).json()
        found = _search(provider.output_path, document)
        urls = [found] if isinstance(found, str) else found if isinstance(found, list) else []
        urls = [u for u in urls if isinstance(u, str) and u]
        if not urls:
            raise ProviderFailed(
                "upstream_error", f"the provider's answer has no output URL at {provider.output_path!r}"
            )
        return [await self._download(url) for url in urls]

    async def _cancel_job(self, client: ProviderClient, task: TaskRow, job: str) -> None:
        provider = client.provider
        assert provider.cancel_path is not None
        try:
            async with asyncio.timeout(CANCEL_CALL_SECONDS):
                await client.call("POST", provider.cancel_path.replace("{id}", job))
            log.info("task %s: provider %s job %s cancelled", task.id, provider.name, job)
        except Exception as exc:  # best effort: the task has ended on our side either way
            log.warning("task %s: provider %s job %s not cancelled: %s", task.id, provider.name, job, exc)

    # -- outputs ------------------------------------------------------------------------------------------

    async def _download(self, url: str) -> RenderedFile:
        try:
            fetched = await self._fetcher.fetch_to_file(
                url, max_bytes=MAX_OUTPUT_BYTES, time_limit=OUTPUT_FETCH_SECONDS
            )
        except FetchError as exc:
            raise ProviderFailed(
                "output_refused", f"the provider's output URL could not be fetched: {exc.detail}"
            ) from exc
        with fetched:
            data = await asyncio.to_thread(fetched.path.read_bytes)
        return await self._as_file(data)

    async def _as_file(self, data: bytes) -> RenderedFile:
        detected = detect_media(data[:SNIFF_BYTES])
        if detected is None:
            raise ProviderFailed(
                "upstream_error", "the provider's output is not an image, video or audio file we accept"
            )
        width, height = await asyncio.to_thread(_dimensions, detected.type, data)
        return RenderedFile(
            data=data,
            mime_type=detected.mime_type,
            format=detected.extension,
            type=detected.type,
            width=width,
            height=height,
        )


def _dimensions(kind: str, data: bytes) -> tuple[int, int]:
    """Width and height from the file's header (audio: 0 and 0). Runs in a thread; Pillow and PyAV are
    imported here, on the first provider output, so a serving process that runs none never loads them."""
    if kind == "image":
        from PIL import Image, UnidentifiedImageError

        try:
            with Image.open(io.BytesIO(data)) as image:
                return image.width, image.height
        except (UnidentifiedImageError, OSError) as exc:
            raise _unreadable(kind) from exc
    if kind == "video":
        import av

        try:
            with av.open(io.BytesIO(data), "r") as container:
                stream = container.streams.video[0]
                return stream.codec_context.width, stream.codec_context.height
        except (OSError, av.error.FFmpegError, IndexError) as exc:
            raise _unreadable(kind) from exc
    return 0, 0


def _unreadable(kind: str) -> ProviderFailed:
    return ProviderFailed("upstream_error", f"the provider's {kind} output cannot be read")
