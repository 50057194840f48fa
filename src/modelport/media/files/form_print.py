"""What a `multipart/form-data` body says, as a hash: the `Idempotency-Key` fingerprint of an upload.

Every HTTP library draws a new boundary when it sends a form again, so the raw bytes of a retried upload
differ from the first; what the form says does not. The hash covers each part's name, file name and
Content-Type and the SHA-256 of its bytes, and nothing of the framing: the boundary, line breaks, other part
headers, their order or case, the order of differently named parts (parts of one name keep their order,
which can mean something). It is fed chunk by chunk as the body arrives: no part is held in memory.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import orjson
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from modelport.errors import InvalidParameters


@dataclass(slots=True)
class _Part:
    name: str | None = None
    filename: str | None = None
    content_type: str | None = None
    digest: hashlib._Hash = field(default_factory=hashlib.sha256)

    def described(self) -> list[str | None]:
        return [self.name, self.filename, self.content_type, self.digest.hexdigest()]


class FormPrint:
    """Feed it the body's chunks (`feed`), then read `hexdigest()`."""

    def __init__(self, boundary: bytes) -> None:
        self._parts: list[_Part] = []
        self._header_name = bytearray()
        self._header_value = bytearray()
        self._headers: dict[bytes, bytes] = {}
        self._parser = MultipartParser(
            boundary,
            {
                "on_part_begin": self._on_part_begin,
                "on_header_field": self._on_header_field,
                "on_header_value": self._on_header_value,
                "on_header_end": self._on_header_end,
                "on_headers_finished": self._on_headers_finished,
                "on_part_data": self._on_part_data,
            },
        )

    def feed(self, chunk: bytes) -> None:
        try:
            self._parser.write(chunk)
        except MultipartParseError as exc:
            raise InvalidParameters("malformed multipart/form-data body") from exc

    def hexdigest(self) -> str:
        described = [part.described() for part in sorted(self._parts, key=lambda part: part.name or "")]
        return hashlib.sha256(orjson.dumps(described)).hexdigest()

    # Parser callbacks.
    def _on_part_begin(self) -> None:
        self._headers = {}
        self._parts.append(_Part())

    def _on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def _on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _on_header_end(self) -> None:
        self._headers[bytes(self._header_name).strip().lower()] = bytes(self._header_value).strip()
        self._header_name.clear()
        self._header_value.clear()

    def _on_headers_finished(self) -> None:
        part = self._parts[-1]
        _, options = parse_options_header(self._headers.get(b"content-disposition", b"").decode("latin-1"))
        name, filename = options.get(b"name"), options.get(b"filename")
        part.name = None if name is None else name.decode("utf-8", errors="replace")
        part.filename = None if filename is None else filename.decode("utf-8", errors="replace")
        content_type = self._headers.get(b"content-type")
        part.content_type = None if content_type is None else content_type.decode("latin-1")

    def _on_part_data(self, data: bytes, start: int, end: int) -> None:
        self._parts[-1].digest.update(data[start:end])
