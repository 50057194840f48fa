"""The streaming multipart reader: yields the `file` part as the body arrives, in any chunking."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from modelport.errors import InvalidParameters, MissingParameter, PayloadTooLarge
from modelport.media.files.multipart import FormFileReader, multipart_boundary

BOUNDARY = "----modelportTestBoundary7MA4YWxk"


def form(*parts: tuple[str, str | None, bytes], boundary: str = BOUNDARY) -> bytes:
    out = b""
    for name, filename, data in parts:
        disposition = f'form-data; name="{name}"'
        if filename is not None:
            disposition += f'; filename="{filename}"'
        out += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n".encode()
        if filename is not None:
            out += b"Content-Type: application/octet-stream\r\n"
        out += b"\r\n" + data + b"\r\n"
    return out + f"--{boundary}--\r\n".encode()


async def chunked(body: bytes, size: int) -> AsyncIterator[bytes]:
    for i in range(0, len(body), size):
        yield body[i : i + size]


async def read_all(reader: FormFileReader) -> bytes:
    return b"".join([chunk async for chunk in reader])


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 100_000])
async def test_reads_the_file_part_in_any_chunking(chunk_size: int) -> None:
    payload = bytes(range(256)) * 40 + b"\r\n--not-the-boundary\r\n"
    body = form(("note", None, b"hello"), ("file", "photo.png", payload), ("after", None, b"x"))
    reader = FormFileReader(chunked(body, chunk_size), BOUNDARY.encode(), max_body_bytes=1 << 20)
    assert await read_all(reader) == payload
    assert reader.filename == "photo.png"
    assert reader.declared_type == "application/octet-stream"


async def test_yields_before_the_body_is_finished() -> None:
    payload = b"A" * 50_000
    body = form(("file", "a.bin", payload))
    consumed = 0

    async def counting() -> AsyncIterator[bytes]:
        nonlocal consumed
        async for chunk in chunked(body, 1000):
            consumed += len(chunk)
            yield chunk

    reader = FormFileReader(counting(), BOUNDARY.encode(), max_body_bytes=1 << 20)
    first = await reader.__aiter__().__anext__()
    assert first and consumed < len(body) // 2


async def test_utf8_filename() -> None:
    body = form(("file", "фото 1.png", b"data"))
    reader = FormFileReader(chunked(body, 5), BOUNDARY.encode(), max_body_bytes=1 << 20)
    assert await read_all(reader) == b"data"
    assert reader.filename == "фото 1.png"


async def test_missing_file_part() -> None:
    body = form(("upload", "x.png", b"data"))
    reader = FormFileReader(chunked(body, 10), BOUNDARY.encode(), max_body_bytes=1 << 20)
    with pytest.raises(MissingParameter, match="file"):
        await read_all(reader)


async def test_two_file_parts_are_refused() -> None:
    body = form(("file", "a.png", b"one"), ("file", "b.png", b"two"))
    reader = FormFileReader(chunked(body, 10), BOUNDARY.encode(), max_body_bytes=1 << 20)
    with pytest.raises(InvalidParameters, match="only one file"):
        await read_all(reader)


async def test_truncated_body() -> None:
    body = form(("file", "a.png", b"x" * 100))[:-30]
    reader = FormFileReader(chunked(body, 10), BOUNDARY.encode(), max_body_bytes=1 << 20)
    with pytest.raises(InvalidParameters, match="ended early"):
        await read_all(reader)


async def test_garbage_body() -> None:
    reader = FormFileReader(chunked(b"this is not multipart at all" * 3, 10), BOUNDARY.encode(), max_body_bytes=1 << 20)
    with pytest.raises(InvalidParameters):
        await read_all(reader)


async def test_body_cap_stops_reading() -> None:
    body = form(("big", None, b"x" * 10_000), ("file", "a.png", b"y"))
    reader = FormFileReader(chunked(body, 1000), BOUNDARY.encode(), max_body_bytes=5000)
    with pytest.raises(PayloadTooLarge):
        await read_all(reader)


def test_boundary_from_content_type() -> None:
    assert multipart_boundary(f"multipart/form-data; boundary={BOUNDARY}") == BOUNDARY.encode()
    assert multipart_boundary('Multipart/Form-Data; boundary="a b"') == b"a b"
    for bad in [None, "application/json", "multipart/form-data", "multipart/mixed; boundary=x"]:
        with pytest.raises(InvalidParameters):
            multipart_boundary(bad)
