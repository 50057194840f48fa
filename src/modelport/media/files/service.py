"""Team media files: upload, list, delete, signed download, resolution of our own URLs, sweeping.

One `FilesService` per process (`services[FILES]`, built in `apps/assemble.py`). It holds no state shared
between processes: the database is the record, the store holds the bytes.

Quota is checked twice: before reading the body (fail fast, and to know how many bytes may still come)
and again atomically with the insert (repository.insert_within_quota), so racing uploads of one team can
never together exceed it. An upload that loses that race has its stored bytes removed.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import AsyncIterable, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.clock import now_ms
from modelport.errors import InvalidParameters, NotFound, QuotaExceeded
from modelport.media.files import repository as repo
from modelport.media.files.checked_stream import CheckedStream
from modelport.media.files.repository import FileRecord
from modelport.media.files.signing import build_download_url, check_signature, derive_key, parse_download_url
from modelport.media.files.storage import FileStore, ObjectMissing
from modelport.media.files.stored import put_new
from modelport.services import ServiceKey
from modelport.settings import FilesSettings
from modelport.web.query_int import plain_int

log = logging.getLogger("modelport.media.files")

MAX_PAGE = 100
# Far past any team's file quota; bounds the value before it reaches a 64-bit SQL parameter.
MAX_OFFSET = 1_000_000
FILES: ServiceKey[FilesService] = ServiceKey("files")


@dataclass(frozen=True, slots=True)
class ResolvedFile:
    """A file behind one of our download URLs, read straight from storage."""

    mime_type: str
    chunks: AsyncIterator[bytes]
    size_bytes: int
    type: str
    name: str


class FilesService:
    def __init__(
        self,
        *,
        engine: AsyncEngine,
        store: FileStore,
        settings: FilesSettings,
        public_base_url: str,
        secret: str,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.engine = engine
        self.store = store
        self.settings = settings
        self.public_base_url = public_base_url.rstrip("/")
        self._key = derive_key(secret)
        self._clock = clock

    # -- upload -----------------------------------------------------------------------------------

    async def upload(
        self, team_id: str, data: AsyncIterable[bytes], filename: Callable[[], str | None]
    ) -> dict[str, Any]:
        """Store one file from `data`; `filename()` is asked once the stream is read (multipart headers)."""
        now = self._clock()
        usage = await repo.team_usage(self.engine, team_id, now)
        if usage.files >= self.settings.quota_files:
            raise QuotaExceeded(
                f"the team already holds {usage.files} uploaded files, the most its upload quota allows;"
                " delete files first"
            )
        room = self.settings.quota_bytes - usage.bytes
        if room <= 0:
            raise QuotaExceeded("the team's storage quota (bytes) is used up; delete files first")
        checked = CheckedStream(data, max_bytes=self.settings.max_upload_bytes, quota_room_bytes=room)
        stored = await put_new(self.store, checked)
        detected = checked.detected
        assert detected is not None  # CheckedStream raises before finishing without a type
        created = self._clock()
        record = FileRecord(
            id=stored.file_id,
            team_id=team_id,
            type=detected.type,
            mime_type=detected.mime_type,
            name=clean_name(filename(), detected.extension),
            size_bytes=stored.size_bytes,
            storage_key=stored.storage_key,
            created_at_ms=created,
            expires_at_ms=created + self.settings.retention_seconds * 1000,
        )
        try:
            inserted = await repo.insert_within_quota(
                self.engine,
                record,
                max_files=self.settings.quota_files,
                max_bytes=self.settings.quota_bytes,
                now_ms=self._clock(),
            )
        except BaseException:
            await self.store.delete(stored.storage_key)
            raise
        if not inserted:
            await self.store.delete(stored.storage_key)
            raise QuotaExceeded(
                f"the team's storage quota ({self.settings.quota_files} files, {self.settings.quota_bytes} bytes)"
                " would be exceeded; delete files first"
            )
        return self.view(record)

    # -- list and delete --------------------------------------------------------------------------

    async def list_page(self, team_id: str, *, limit: int, offset: int) -> dict[str, Any]:
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidParameters(f"limit must be between 1 and {MAX_PAGE}", param="limit")
        if not 0 <= offset <= MAX_OFFSET:
            raise InvalidParameters(f"offset must be between 0 and {MAX_OFFSET}", param="offset")
        records, total = await repo.list_files(self.engine, team_id, self._clock(), limit=limit, offset=offset)
        return {"files": [self.view(r) for r in records], "total": total, "limit": limit, "offset": offset}

    async def delete(self, team_id: str, file_id: str) -> dict[str, Any]:
        deleted = await repo.delete_team_file(self.engine, team_id, file_id)
        if deleted is None:
            raise NotFound(f"no file {file_id!r}")
        await self.store.delete(deleted.storage_key)
        return {"file_id": deleted.id, "deleted": True}

    # -- download ---------------------------------------------------------------------------------

    async def find_signed(self, file_id: str, expires: str | None, signature: str | None) -> FileRecord:
        """The live file a download URL names; NotFound for a bad or expired signature alike."""
        now = self._clock()
        if expires is not None and plain_int(expires) is None:
            raise InvalidParameters("expires must be an integer (UNIX seconds)", param="expires")
        if not check_signature(self._key, file_id, expires, signature, now):
            raise NotFound("the download link is invalid or has expired")
        record = await repo.get_live_file(self.engine, file_id, now)
        if record is None:
            raise NotFound("the file does not exist or has expired")
        return record

    def download_url(self, record: FileRecord) -> str:
        return build_download_url(self.public_base_url, self._key, record.id, record.expires_at_ms)

    def signed_url(self, file_id: str, expires_at_ms: int) -> str:
        """The download URL of a file whose row is known to expire at `expires_at_ms` (task results)."""
        return build_download_url(self.public_base_url, self._key, file_id, expires_at_ms)

    async def resolve(self, url: str) -> ResolvedFile | None:
        """Read one of our own download URLs without a network fetch.

        None: not one of our URLs (the caller fetches it as any other). InvalidParameters: ours, but
        its signature is wrong or the file has expired or been deleted.
        """
        ref = parse_download_url(self.public_base_url, url)
        if ref is None:
            return None
        try:
            record = await self.find_signed(ref.file_id, ref.expires, ref.signature)
            chunks = await self.store.open_range(record.storage_key, 0, record.size_bytes)
        except NotFound as exc:
            raise InvalidParameters(f"the media file URL cannot be used: {exc.detail}") from exc
        except ObjectMissing as exc:
            raise InvalidParameters("the media file URL cannot be used: its bytes are gone") from exc
        return ResolvedFile(
            mime_type=record.mime_type,
            chunks=chunks,
            size_bytes=record.size_bytes,
            type=record.type,
            name=record.name,
        )

    # -- lifetime ---------------------------------------------------------------------------------

    async def sweep_once(self) -> int:
        """Remove every expired file (row, then bytes); returns how many this call removed."""
        removed = 0
        while True:
            rows = await repo.delete_expired(self.engine, self._clock(), batch=self.settings.sweep_batch)
            for row in rows:
                try:
                    await self.store.delete(row.storage_key)
                except Exception:
                    log.exception("could not delete stored bytes of expired file %s", row.id)
            removed += len(rows)
            if len(rows) < self.settings.sweep_batch:
                return removed

    # -- views ------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        await self.store.aclose()

    def view(self, record: FileRecord) -> dict[str, Any]:
        url = self.download_url(record)
        return {
            "file_id": record.id,
            "type": record.type,
            "download_url": url,
            "url": url,
            "name": record.name,
            "mime_type": record.mime_type,
            "size_bytes": record.size_bytes,
            "created_at": record.created_at_ms // 1000,
            "expires_at": record.expires_at_ms // 1000,
        }


def clean_name(filename: str | None, extension: str) -> str:
    """A display name from the client's file name: no path, no control characters, at most 255 chars."""
    name = (filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in unicodedata.normalize("NFC", name) if unicodedata.category(ch)[0] != "C")
    name = name.strip().strip(".")
    if not name:
        name = f"file.{extension}"
    if len(name) > 255:
        stem, dot, ext = name.rpartition(".")
        name = (stem[: 254 - len(ext)] + dot + ext) if dot and len(ext) <= 16 else name[:255]
    return name
