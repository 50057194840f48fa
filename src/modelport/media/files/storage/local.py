"""Local-directory file store (the embedded default): one file per object under a root directory.

An upload is written to a hidden temporary file beside its target and renamed into place only when the
stream ends cleanly, so readers never see a half-written object and an aborted upload leaves nothing.
File I/O runs in worker threads so the event loop never blocks on the disk.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterable, AsyncIterator
from pathlib import Path
from typing import BinaryIO

import anyio
import anyio.to_thread

from modelport.media.files.storage.base import ObjectMissing, check_key

READ_CHUNK = 64 * 1024


class LocalFileStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    async def put_stream(self, key: str, chunks: AsyncIterable[bytes]) -> int:
        target = self._path(key)
        await anyio.to_thread.run_sync(lambda: target.parent.mkdir(parents=True, exist_ok=True))
        temp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.part")
        size = 0
        try:
            async with await anyio.open_file(temp, "wb") as out:
                async for chunk in chunks:
                    if chunk:
                        await out.write(chunk)
                        size += len(chunk)
            await anyio.to_thread.run_sync(os.replace, temp, target)
        except BaseException:
            # Cancellation included: a partial upload must not survive.
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(lambda: temp.unlink(missing_ok=True))
            raise
        return size

    async def open_range(self, key: str, start: int, end: int) -> AsyncIterator[bytes]:
        path = self._path(key)
        try:
            handle: BinaryIO = await anyio.to_thread.run_sync(path.open, "rb")
        except FileNotFoundError as exc:
            raise ObjectMissing(key) from exc
        return _read_range(handle, start, end)

    async def delete(self, key: str) -> None:
        path = self._path(key)
        await anyio.to_thread.run_sync(lambda: path.unlink(missing_ok=True))

    async def exists(self, key: str) -> bool:
        path = self._path(key)
        return await anyio.to_thread.run_sync(path.is_file)

    async def aclose(self) -> None:
        return None


async def _read_range(handle: BinaryIO, start: int, end: int) -> AsyncIterator[bytes]:
    try:
        await anyio.to_thread.run_sync(handle.seek, start)
        remaining = end - start
        while remaining > 0:
            chunk = await anyio.to_thread.run_sync(handle.read, min(READ_CHUNK, remaining))
            if not chunk:
                break
            remaining -= len(chunk)
            yield chunk
    finally:
        handle.close()
