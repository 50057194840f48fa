"""Streaming `multipart/form-data` reader: yields the bytes of one form part as they arrive.

python-multipart's push parser is fed straight from the request body stream; its callbacks collect the
data of the wanted part, and the generator hands those chunks on after each write. Nothing is buffered
beyond one network chunk, other parts are skipped, and the body as a whole is capped so that extra form
fields cannot grow it without bound.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from modelport.errors import InvalidParameters, MissingParameter, PayloadTooLarge

# Room for the boundaries and part headers around the file, and a few small form fields.
BODY_OVERHEAD_BYTES = 64 * 1024


def multipart_boundary(content_type: str | None) -> bytes:
    """The boundary of a `multipart/form-data` Content-Type, or a 400."""
    ctype, options = parse_options_header(content_type or "")
    if ctype != b"multipart/form-data":
        raise InvalidParameters("the request body must be multipart/form-data with the file in form part 'file'")
    boundary = options.get(b"boundary")
    if not boundary or len(boundary) > 200:
        raise InvalidParameters("the multipart/form-data Content-Type has no valid boundary")
    return boundary


class FormFileReader:
    """Iterate over it to get the bytes of form part `field`; `filename` is set once the part begins."""

    def __init__(
        self, body: AsyncIterable[bytes], boundary: bytes, *, field: str = "file", max_body_bytes: int
    ) -> None:
        self._body = body
        self._field = field.encode()
        self._max_body_bytes = max_body_bytes
        self.filename: str | None = None
        self.declared_type: str | None = None
        self._found = False
        self._in_field = False
        self._ended = False
        self._pending: list[bytes] = []
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
                "on_part_end": self._on_part_end,
                "on_end": self._on_end,
            },
        )

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        async for chunk in self._body:
            received += len(chunk)
            if received > self._max_body_bytes:
                raise PayloadTooLarge(f"the upload exceeds the limit of {self._max_body_bytes} bytes")
            try:
                self._parser.write(chunk)
            except MultipartParseError as exc:
                raise InvalidParameters("malformed multipart/form-data body") from exc
            if self._pending:
                pending, self._pending = self._pending, []
                for data in pending:
                    yield data
            if self._ended:
                break
        if not self._ended:
            raise InvalidParameters("the multipart/form-data body ended early")
        if not self._found:
            raise MissingParameter(f"{self._field.decode()} is required (a form part named 'file')")

    # Parser callbacks: they only record state; the generator above does the yielding.
    def _on_part_begin(self) -> None:
        self._headers = {}

    def _on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def _on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _on_header_end(self) -> None:
        self._headers[bytes(self._header_name).strip().lower()] = bytes(self._header_value).strip()
        self._header_name.clear()
        self._header_value.clear()

    def _on_headers_finished(self) -> None:
        disposition = self._headers.get(b"content-disposition", b"")
        _, options = parse_options_header(disposition.decode("latin-1"))
        if options.get(b"name") != self._field:
            return
        if self._found:
            raise InvalidParameters("only one file per request")
        self._found = self._in_field = True
        filename = options.get(b"filename")
        if filename is not None:
            self.filename = filename.decode("utf-8", errors="replace")
        declared = self._headers.get(b"content-type")
        if declared:
            self.declared_type = declared.decode("latin-1")

    def _on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self._in_field and end > start:
            self._pending.append(data[start:end])

    def _on_part_end(self) -> None:
        self._in_field = False

    def _on_end(self) -> None:
        self._ended = True
