"""Bytes put in the store under a new file id: one id and key scheme for uploads and task results.

The file's row follows in a transaction of its own feature (an upload's quota check, a task's success),
through `repository`; whoever stored bytes that never got a row deletes them.
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from dataclasses import dataclass

from modelport.ids import new_id
from modelport.media.files.storage import FileStore


@dataclass(frozen=True, slots=True)
class StoredBytes:
    file_id: str
    storage_key: str
    size_bytes: int


def storage_key(file_id: str) -> str:
    # The id's last two hex digits spread the files over 256 folders of the store.
    return f"{file_id[-2:]}/{file_id}"


async def put_new(store: FileStore, chunks: AsyncIterable[bytes]) -> StoredBytes:
    """Store `chunks` under a new file id; raises whatever the stream or the store raises (nothing kept)."""
    file_id = new_id("file", 16)
    key = storage_key(file_id)
    size = await store.put_stream(key, chunks)
    return StoredBytes(file_id, key, size)
