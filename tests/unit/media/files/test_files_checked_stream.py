"""The checked upload stream: type sniffed before any byte passes, limits enforced mid-stream."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from modelport.errors import InvalidParameters, PayloadTooLarge, QuotaExceeded
from modelport.media.files.checked_stream import CheckedStream
from modelport.media.files.detect import SNIFF_BYTES
from tests.unit.media.files import samples


async def chunked(data: bytes, size: int, pulled: list[int] | None = None) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        if pulled is not None:
            pulled.append(i + size)
        yield data[i : i + size]


async def collect(stream: CheckedStream) -> bytes:
    return b"".join([c async for c in stream])


@pytest.mark.parametrize("size", [1, 100, SNIFF_BYTES, 100_000])
async def test_passes_media_through_unchanged(size: int) -> None:
    data = samples.wav_bytes(seconds=1.5)  # 24 KB: longer than the sniff window
    stream = CheckedStream(chunked(data, size), max_bytes=1 << 20, quota_room_bytes=1 << 20)
    assert await collect(stream) == data
    assert stream.size == len(data)
    assert stream.detected is not None and stream.detected.mime_type == "audio/wav"


async def test_short_file() -> None:
    data = samples.image_bytes()
    stream = CheckedStream(chunked(data, 10), max_bytes=1 << 20, quota_room_bytes=1 << 20)
    assert await collect(stream) == data
    assert stream.detected is not None and stream.detected.type == "image"


async def test_non_media_refused_before_any_byte_is_yielded() -> None:
    data = samples.PDF_BYTES * 500
    stream = CheckedStream(chunked(data, 1000), max_bytes=1 << 20, quota_room_bytes=1 << 20)
    seen: list[bytes] = []
    with pytest.raises(InvalidParameters, match="not a supported"):
        async for chunk in stream:
            seen.append(chunk)
    assert seen == []


async def test_empty_file() -> None:
    stream = CheckedStream(chunked(b"", 10), max_bytes=100, quota_room_bytes=100)
    with pytest.raises(InvalidParameters, match="empty"):
        await collect(stream)


async def test_over_the_limit_stops_while_streaming() -> None:
    data = samples.wav_bytes(seconds=4)  # 64 KB
    pulled: list[int] = []
    stream = CheckedStream(chunked(data, 4096, pulled), max_bytes=20_000, quota_room_bytes=1 << 20)
    with pytest.raises(PayloadTooLarge):
        await collect(stream)
    # It stopped reading right after crossing the limit, not at the end of the body.
    assert max(pulled) <= 20_000 + 4096


async def test_over_the_quota_room() -> None:
    data = samples.wav_bytes(seconds=4)
    stream = CheckedStream(chunked(data, 4096), max_bytes=1 << 20, quota_room_bytes=30_000)
    with pytest.raises(QuotaExceeded):
        await collect(stream)
