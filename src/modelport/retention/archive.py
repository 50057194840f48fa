"""Request log rows as gzip JSON lines: the archive files the pruner writes before it deletes, and the
lines `modelport admin logs export` streams.

One line per row: every column of `request_logs` under its own name (times in UNIX milliseconds, cost in
micro-USD, `input`/`result` as the JSON text stored). Archive files go to the file store (local or S3) at
`archive/request_logs/<team id>/<UTC day>/<first row's ms>-<digest of the ids>.jsonl.gz`, one per team,
day and pruning batch; the name depends only on the rows, so a batch archived again after a crash (written,
not yet deleted) replaces its own file instead of duplicating the rows.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import orjson

from modelport.media.files.storage import FileStore
from modelport.requestlog.tables import request_logs

ARCHIVE_COLUMNS = tuple(request_logs.c)
DAY_MS = 86_400_000


class ArchiveMismatch(Exception):
    """The file read back does not hold exactly the rows written: nothing is deleted."""


def jsonl_line(row: Any) -> bytes:
    return orjson.dumps(dict(zip(map(str, row._fields), row, strict=True))) + b"\n"


def utc_day(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms // DAY_MS * 86_400, tz=dt.UTC).strftime("%Y-%m-%d")


def archive_key(team_id: str, rows: Sequence[Any]) -> str:
    first = rows[0]
    digest = hashlib.sha256("\n".join(r.id for r in rows).encode()).hexdigest()[:16]
    return f"archive/request_logs/{team_id}/{utc_day(first.created_at_ms)}/{first.created_at_ms}-{digest}.jsonl.gz"


async def write_verified(store: FileStore, key: str, rows: Sequence[Any]) -> int:
    """Write the rows to `key`, read the file back and check it holds exactly them; returns its size."""
    body = gzip.compress(b"".join(jsonl_line(r) for r in rows), compresslevel=6, mtime=0)

    async def chunks() -> AsyncIterator[bytes]:
        yield body

    size = await store.put_stream(key, chunks())
    read = bytearray()
    async for chunk in await store.open_range(key, 0, size):
        read.extend(chunk)
    try:
        ids = [orjson.loads(line)["id"] for line in gzip.decompress(bytes(read)).splitlines()]
    except (OSError, EOFError, orjson.JSONDecodeError, KeyError, TypeError) as exc:
        raise ArchiveMismatch(f"{key}: unreadable after writing ({exc})") from exc
    if size != len(body) or ids != [r.id for r in rows]:
        raise ArchiveMismatch(f"{key}: read back {len(ids)} rows, wrote {len(rows)}")
    return size
