"""Both storage backends against one contract: the local directory and S3 over a real S3 server (moto)."""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from aiobotocore.session import get_session
from moto.server import ThreadedMotoServer

from modelport.media.files.storage import FileStore, ObjectMissing
from modelport.media.files.storage.local import LocalFileStore
from modelport.media.files.storage.s3 import MIN_PART_SIZE, S3FileStore

if TYPE_CHECKING:
    from types_aiobotocore_s3 import S3Client


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def s3_client(endpoint: str) -> AbstractAsyncContextManager[S3Client]:
    return get_session().create_client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


async def make_s3_store(endpoint: str) -> S3FileStore:
    bucket = "mp-" + secrets.token_hex(6)
    async with s3_client(endpoint) as client:
        await client.create_bucket(Bucket=bucket)
    return S3FileStore(
        bucket=bucket,
        prefix="files/",
        endpoint_url=endpoint,
        region="us-east-1",
        access_key_id="testing",
        secret_access_key="testing",
        addressing_style="path",
        part_size=MIN_PART_SIZE,
    )


@pytest.fixture(params=["local", "s3"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[FileStore]:
    backend: FileStore
    if request.param == "local":
        backend = LocalFileStore(tmp_path / "media")
    else:
        backend = await make_s3_store(request.getfixturevalue("s3_endpoint"))
    try:
        yield backend
    finally:
        await backend.aclose()


async def chunks(data: bytes, size: int = 65536, fail_after: int | None = None) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        if fail_after is not None and i >= fail_after:
            raise RuntimeError("client went away")
        yield data[i : i + size]


async def read(store: FileStore, key: str, start: int, end: int) -> bytes:
    return b"".join([c async for c in await store.open_range(key, start, end)])


async def test_put_read_ranges_delete(store: FileStore) -> None:
    data = os.urandom(300_000)
    assert await store.put_stream("ab/file_1", chunks(data, 10_000)) == len(data)
    assert await store.exists("ab/file_1")
    assert await read(store, "ab/file_1", 0, len(data)) == data
    assert await read(store, "ab/file_1", 1000, 1010) == data[1000:1010]
    assert await read(store, "ab/file_1", len(data) - 1, len(data)) == data[-1:]
    await store.delete("ab/file_1")
    assert not await store.exists("ab/file_1")
    await store.delete("ab/file_1")  # deleting twice is fine


async def test_missing_object(store: FileStore) -> None:
    assert not await store.exists("zz/nothing")
    with pytest.raises(ObjectMissing):
        await store.open_range("zz/nothing", 0, 10)


async def test_failed_stream_leaves_nothing(store: FileStore) -> None:
    data = os.urandom(200_000)
    with pytest.raises(RuntimeError, match="went away"):
        await store.put_stream("cd/file_2", chunks(data, 10_000, fail_after=100_000))
    assert not await store.exists("cd/file_2")


@pytest.mark.parametrize("key", ["../escape", "/abs", "a//b", "", "a/../b", "sp ace"])
async def test_keys_cannot_escape(store: FileStore, key: str) -> None:
    with pytest.raises(ValueError):
        await store.put_stream(key, chunks(b"x"))


async def test_local_failure_leaves_no_temp_file(tmp_path: Path) -> None:
    store = LocalFileStore(tmp_path)
    with pytest.raises(RuntimeError):
        await store.put_stream("ef/file_3", chunks(b"x" * 100_000, 1000, fail_after=50_000))
    assert files_under(tmp_path) == []


def files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


async def test_s3_multipart_upload_of_a_large_object(s3_endpoint: str) -> None:
    store = await make_s3_store(s3_endpoint)
    data = os.urandom(2 * MIN_PART_SIZE + 12345)
    try:
        assert await store.put_stream("gh/file_4", chunks(data, 256 * 1024)) == len(data)
        assert await read(store, "gh/file_4", 0, len(data)) == data
        middle = MIN_PART_SIZE - 10
        assert await read(store, "gh/file_4", middle, middle + 20) == data[middle : middle + 20]
        async with s3_client(s3_endpoint) as client:
            head = await client.head_object(Bucket=store.bucket, Key="files/gh/file_4")
        assert head["ContentLength"] == len(data)
        assert head["ETag"].strip('"').endswith("-3")  # three parts: it really went multipart
    finally:
        await store.aclose()


async def test_s3_failed_multipart_upload_is_aborted(s3_endpoint: str) -> None:
    store = await make_s3_store(s3_endpoint)
    data = os.urandom(2 * MIN_PART_SIZE)
    try:
        with pytest.raises(RuntimeError):
            await store.put_stream("ij/file_5", chunks(data, 256 * 1024, fail_after=MIN_PART_SIZE + 1024))
        async with s3_client(s3_endpoint) as client:
            uploads = await client.list_multipart_uploads(Bucket=store.bucket)
            listed = await client.list_objects_v2(Bucket=store.bucket)
        assert uploads.get("Uploads", []) == []
        assert listed.get("KeyCount") == 0
    finally:
        await store.aclose()
