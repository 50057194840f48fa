"""S3-compatible file store (AWS S3, MinIO, Ceph, R2...) over aiobotocore.

aiobotocore is the async core that aioboto3 itself wraps: the client API is botocore's own (so every
S3-compatible server botocore speaks to works), it is released in step with botocore, and fully typed
through `types-aiobotocore-s3`. We need only the low-level client, so the extra aioboto3 layer buys
nothing.

Uploads stream: bytes are gathered into parts of `part_size` (at least S3's 5 MiB minimum) and sent as a
multipart upload, so at most one part is in memory. An object that fits in one part is a single
PutObject. A failed upload is aborted, leaving no object and no orphaned parts.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterable, AsyncIterator
from typing import TYPE_CHECKING, Any

from aiobotocore.config import AioConfig
from aiobotocore.session import get_session
from botocore.exceptions import ClientError

from modelport.media.files.storage.base import ObjectMissing, check_key

if TYPE_CHECKING:
    from types_aiobotocore_s3 import S3Client
    from types_aiobotocore_s3.type_defs import CompletedPartTypeDef

MIN_PART_SIZE = 5 * 1024 * 1024
READ_CHUNK = 64 * 1024
_MISSING_CODES = {"404", "NoSuchKey", "NotFound"}


class S3FileStore:
    def __init__(
        self,
        *,
        bucket: str,
        prefix: str = "",
        endpoint_url: str | None = None,
        region: str = "us-east-1",
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        addressing_style: str = "auto",
        part_size: int = 8 * 1024 * 1024,
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix
        self.part_size = max(part_size, MIN_PART_SIZE)
        self._client_args: dict[str, Any] = {
            "region_name": region,
            "endpoint_url": endpoint_url,
            "aws_access_key_id": access_key_id,
            "aws_secret_access_key": secret_access_key,
            "config": AioConfig(
                s3={"addressing_style": addressing_style},
                retries={"max_attempts": 3, "mode": "standard"},
            ),
        }
        self._client: S3Client | None = None
        self._exit_stack = contextlib.AsyncExitStack()
        self._lock = asyncio.Lock()

    async def _s3(self) -> S3Client:
        # Created on first use, inside the running loop, and shared by every request of this process.
        if self._client is None:
            async with self._lock:
                if self._client is None:
                    creator = get_session().create_client("s3", **self._client_args)
                    self._client = await self._exit_stack.enter_async_context(creator)
        return self._client

    def _key(self, key: str) -> str:
        return self.prefix + check_key(key)

    async def put_stream(self, key: str, chunks: AsyncIterable[bytes]) -> int:
        s3 = await self._s3()
        object_key = self._key(key)
        buffer = bytearray()
        size = 0
        upload_id: str | None = None
        parts: list[CompletedPartTypeDef] = []
        try:
            async for chunk in chunks:
                buffer += chunk
                size += len(chunk)
                while len(buffer) >= self.part_size:
                    if upload_id is None:
                        created = await s3.create_multipart_upload(Bucket=self.bucket, Key=object_key)
                        upload_id = created["UploadId"]
                    part = bytes(buffer[: self.part_size])
                    del buffer[: self.part_size]
                    number = len(parts) + 1
                    sent = await s3.upload_part(
                        Bucket=self.bucket, Key=object_key, UploadId=upload_id, PartNumber=number, Body=part
                    )
                    parts.append({"ETag": sent["ETag"], "PartNumber": number})
            if upload_id is None:
                await s3.put_object(Bucket=self.bucket, Key=object_key, Body=bytes(buffer))
                return size
            if buffer:
                number = len(parts) + 1
                sent = await s3.upload_part(
                    Bucket=self.bucket, Key=object_key, UploadId=upload_id, PartNumber=number, Body=bytes(buffer)
                )
                parts.append({"ETag": sent["ETag"], "PartNumber": number})
            await s3.complete_multipart_upload(
                Bucket=self.bucket, Key=object_key, UploadId=upload_id, MultipartUpload={"Parts": parts}
            )
            return size
        except BaseException:
            if upload_id is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(
                        s3.abort_multipart_upload(Bucket=self.bucket, Key=object_key, UploadId=upload_id)
                    )
            raise

    async def open_range(self, key: str, start: int, end: int) -> AsyncIterator[bytes]:
        s3 = await self._s3()
        if end <= start:
            # S3 has no empty range; check existence and produce nothing.
            if not await self.exists(key):
                raise ObjectMissing(key)
            return _empty()
        try:
            response = await s3.get_object(Bucket=self.bucket, Key=self._key(key), Range=f"bytes={start}-{end - 1}")
        except ClientError as exc:
            if _error_code(exc) in _MISSING_CODES:
                raise ObjectMissing(key) from exc
            raise
        return _read_body(response["Body"])

    async def delete(self, key: str) -> None:
        s3 = await self._s3()
        await s3.delete_object(Bucket=self.bucket, Key=self._key(key))

    async def exists(self, key: str) -> bool:
        s3 = await self._s3()
        try:
            await s3.head_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            if _error_code(exc) in _MISSING_CODES:
                return False
            raise
        return True

    async def aclose(self) -> None:
        await self._exit_stack.aclose()
        self._client = None


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


async def _empty() -> AsyncIterator[bytes]:
    return
    yield b""  # pragma: no cover - makes this an async generator


async def _read_body(body: Any) -> AsyncIterator[bytes]:
    try:
        async for chunk in body.iter_chunks(READ_CHUNK):
            yield chunk
    finally:
        body.close()
