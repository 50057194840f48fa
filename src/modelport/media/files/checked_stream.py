"""The upload byte stream, checked on the way to storage: media type sniffed, size capped.

The first SNIFF_BYTES bytes are held back until the type is known, so nothing reaches storage for a
file we will refuse; after that chunks pass straight through while being counted. Going over the upload
limit is a 413, going over the team's remaining quota a QuotaExceeded, both raised mid-stream (the
file store then discards what it wrote).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

from modelport.errors import InvalidParameters, PayloadTooLarge, QuotaExceeded
from modelport.media.files.detect import SNIFF_BYTES, DetectedMedia, detect_media


class CheckedStream:
    def __init__(self, chunks: AsyncIterable[bytes], *, max_bytes: int, quota_room_bytes: int) -> None:
        self._chunks = chunks
        self._max_bytes = max_bytes
        self._room = quota_room_bytes
        self.size = 0
        self.detected: DetectedMedia | None = None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        head = bytearray()
        async for chunk in self._chunks:
            self._count(len(chunk))
            if self.detected is not None:
                yield chunk
                continue
            head += chunk
            if len(head) >= SNIFF_BYTES:
                self._detect(bytes(head))
                yield bytes(head)
                head.clear()
        if self.detected is None:
            # The whole file is shorter than the sniff window.
            self._detect(bytes(head))
            if head:
                yield bytes(head)

    def _count(self, n: int) -> None:
        self.size += n
        if self.size > self._max_bytes:
            raise PayloadTooLarge(f"the file exceeds the upload limit of {self._max_bytes} bytes")
        if self.size > self._room:
            raise QuotaExceeded("the team's storage quota (bytes) would be exceeded; delete files first")

    def _detect(self, head: bytes) -> None:
        if not head:
            raise InvalidParameters("the file is empty")
        detected = detect_media(head)
        if detected is None:
            raise InvalidParameters("the file is not a supported image, video or audio format")
        self.detected = detected
