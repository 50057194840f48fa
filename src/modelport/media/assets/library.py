"""The asset library interface the `vendorA` provider is served by, and its embedded implementation.

A library takes a fetched, probed file and says what became of it: `Added(status, ...)`. Two libraries
(`MODELPORT_ASSETS__BACKEND`): `EmbeddedLibrary` here (the default) and `http_library.HttpLibrary`
(the vendorA asset API).

Embedded: the bytes go to our file store (`assets/<team>/<asset>`), the registration answers
`processing`, and a moderation pass decodes the whole file (every frame) in a thread, then moves the
asset to `active`, or to `failed` with a `reason`. Assets still `processing` when a process stops are
moderated again at the next start (from the stored bytes).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.clock import now_ms
from modelport.media.assets import repository as repo
from modelport.media.assets.probe import Probed, Rejected, decode_fully, probe
from modelport.media.assets.repository import AssetRecord
from modelport.media.assets.states import AssetStatus
from modelport.media.files.storage import FileStore, ObjectMissing
from modelport.services import ServiceKey

log = logging.getLogger("modelport.media.assets")
ASSET_LIBRARY: ServiceKey[AssetLibrary] = ServiceKey("asset library")


@dataclasses.dataclass(frozen=True, slots=True)
class Added:
    status: AssetStatus
    reason: str | None = None
    upstream_id: str | None = None
    storage_key: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class NewAsset:
    asset_id: str
    team_id: str
    type: str
    name: str | None
    path: Path  # the fetched file; the library may take it over (`take_file`)
    probed: Probed


class AssetLibrary(Protocol):
    backend: str

    def ensure_available(self) -> None:
        """Raise ProviderUnavailable (503) at once when the library cannot take calls now."""
        ...

    async def add(self, asset: NewAsset) -> Added:
        """Put the asset in the library; raises AssetRejected (400) or ProviderUnavailable (503)."""
        ...

    async def after_insert(self, asset: NewAsset, added: Added) -> None:
        """Called once the asset's row exists (start background work that updates it)."""
        ...

    async def discard(self, asset: NewAsset, added: Added) -> None:
        """The asset's row could not be written: undo `add`."""
        ...

    async def refresh(self, record: AssetRecord) -> tuple[AssetStatus, str | None] | None:
        """The library's current (status, reason) of a `processing` asset, or None if unknown now."""
        ...

    async def remove(self, record: AssetRecord) -> None: ...

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...


class EmbeddedLibrary:
    backend = "embedded"

    def __init__(
        self,
        engine: AsyncEngine,
        store: FileStore,
        *,
        work_dir: Path,
        concurrency: int = 2,
        decode: Callable[[Path, Probed], None] = decode_fully,
        time_limit: float = 600.0,
    ) -> None:
        self._time_limit = time_limit
        self._engine = engine
        self._store = store
        self._work_dir = work_dir
        self._slots = asyncio.Semaphore(concurrency)
        self._decode = decode
        self._tasks: set[asyncio.Task[None]] = set()
        self._pending: dict[str, tuple[Path, Probed]] = {}

    def ensure_available(self) -> None:
        return None

    async def add(self, asset: NewAsset) -> Added:
        key = f"assets/{asset.team_id}/{asset.asset_id}"
        await self._store.put_stream(key, _file_chunks(asset.path))
        # Moderation reads its own copy: the caller removes the fetched file when the request ends.
        self._work_dir.mkdir(parents=True, exist_ok=True)
        copy = self._work_dir / f"moderate-{asset.asset_id}"
        await asyncio.to_thread(_link_or_copy, asset.path, copy)
        self._pending[asset.asset_id] = (copy, asset.probed)
        return Added(status=AssetStatus.PROCESSING, storage_key=key)

    async def after_insert(self, asset: NewAsset, added: Added) -> None:
        found = self._pending.pop(asset.asset_id, None)
        if found is not None:
            path, probed = found
            self._spawn(self._moderate(asset.asset_id, path, probed))

    async def discard(self, asset: NewAsset, added: Added) -> None:
        """The row could not be written: drop what `add` stored."""
        found = self._pending.pop(asset.asset_id, None)
        if found is not None:
            _remove(found[0])
        if added.storage_key:
            await self._store.delete(added.storage_key)

    async def refresh(self, record: AssetRecord) -> tuple[AssetStatus, str | None] | None:
        return None  # moderation writes the row itself

    async def remove(self, record: AssetRecord) -> None:
        if record.storage_key:
            await self._store.delete(record.storage_key)

    async def start(self) -> None:
        """Moderate again what a stopped process left `processing`; drop work files a crash left behind."""
        await asyncio.to_thread(remove_stale_files, self._work_dir, ("moderate-", "fetch-"), STALE_SECONDS)
        for record in await repo.processing_assets(self._engine, self.backend):
            self._spawn(self._recover(record))

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task

    async def wait_idle(self) -> None:
        """For tests and shutdown: every moderation pass started so far has finished."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- moderation -------------------------------------------------------------------------------

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _moderate(self, asset_id: str, path: Path, probed: Probed) -> None:
        try:
            async with self._slots:
                try:
                    async with asyncio.timeout(self._time_limit):
                        await asyncio.to_thread(self._decode, path, probed)
                    status, reason = AssetStatus.ACTIVE, None
                except Rejected as exc:
                    status, reason = AssetStatus.FAILED, exc.reason[:255]
                except TimeoutError:
                    # The thread cannot be stopped; it finishes in the background, the slot is freed.
                    status, reason = (
                        AssetStatus.FAILED,
                        f"moderation did not finish within {self._time_limit:g} seconds",
                    )
            await repo.finish_processing(self._engine, asset_id, status=status, reason=reason, now_ms=now_ms())
            log.info("asset %s moderated: %s%s", asset_id, status, f" ({reason})" if reason else "")
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("moderation of asset %s failed; it stays processing until the next start", asset_id)
        finally:
            _remove(path)

    async def _recover(self, record: AssetRecord) -> None:
        self._work_dir.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f"moderate-{record.id}-", dir=self._work_dir)
        os.close(fd)
        path = Path(name)
        try:
            if record.storage_key is None:
                raise ObjectMissing(record.id)
            chunks = await self._store.open_range(record.storage_key, 0, record.size_bytes)
            fh = await asyncio.to_thread(path.open, "wb")
            try:
                async for chunk in chunks:
                    await asyncio.to_thread(fh.write, chunk)
            finally:
                fh.close()
            probed = await asyncio.to_thread(probe, path, record.size_bytes)
        except (ObjectMissing, Rejected) as exc:
            _remove(path)
            reason = exc.reason if isinstance(exc, Rejected) else "the stored file is gone"
            await repo.finish_processing(
                self._engine, record.id, status=AssetStatus.FAILED, reason=reason, now_ms=now_ms()
            )
            return
        await self._moderate(record.id, path, probed)


STALE_SECONDS = 6 * 3600  # far past any fetch or moderation pass: another live process cannot own it


def remove_stale_files(directory: Path, prefixes: tuple[str, ...], older_than: float) -> int:
    """Delete files named with `prefixes` not modified for `older_than` seconds; how many went."""
    if not directory.is_dir():
        return 0
    cutoff = time.time() - older_than
    removed = 0
    for entry in directory.iterdir():
        if entry.name.startswith(prefixes) and entry.is_file() and entry.stat().st_mtime < cutoff:
            entry.unlink(missing_ok=True)
            removed += 1
    return removed


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.unlink(missing_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


async def _file_chunks(path: Path, size: int = 1024 * 1024) -> AsyncIterator[bytes]:
    with path.open("rb") as fh:
        while chunk := await asyncio.to_thread(fh.read, size):
            yield chunk
