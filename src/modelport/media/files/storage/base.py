"""The file store interface every store implements.

Bytes always move as async iterators of chunks, so neither an upload nor a download is ever held whole
in memory. Keys are relative, slash-separated paths made by our own code; `check_key` refuses anything
else so a key can never escape the local root or the S3 prefix.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, AsyncIterator
from typing import Protocol

_KEY_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


class ObjectMissing(Exception):
    """The key names no stored object."""


def check_key(key: str) -> str:
    segments = key.split("/")
    if not 1 <= len(segments) <= 8 or not all(_KEY_SEGMENT.match(s) for s in segments):
        raise ValueError(f"invalid storage key: {key!r}")
    return key


class FileStore(Protocol):
    async def put_stream(self, key: str, chunks: AsyncIterable[bytes]) -> int:
        """Store the chunks under `key`; return the byte count.

        If `chunks` raises, nothing is left behind (no partial object) and the error propagates.
        """
        ...

    async def open_range(self, key: str, start: int, end: int) -> AsyncIterator[bytes]:
        """Bytes `start` (inclusive) to `end` (exclusive) of the object, as chunks.

        Raises ObjectMissing before any byte is produced if the object does not exist.
        """
        ...

    async def delete(self, key: str) -> None:
        """Remove the object; a missing object is not an error."""
        ...

    async def exists(self, key: str) -> bool: ...

    async def aclose(self) -> None:
        """Release connections; called once at shutdown."""
        ...
