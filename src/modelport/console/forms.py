"""Reading the console's query strings and forms: a bad value is a 400 page naming it, never a 500."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import TypeVar

from starlette.requests import Request
from starlette.responses import StreamingResponse

from modelport.errors import InvalidParameters
from modelport.web.query_int import plain_int


def choice(request: Request, name: str, allowed: Sequence[str], default: str) -> str:
    value = request.query_params.get(name) or default
    if value not in allowed:
        raise InvalidParameters(f"{name} must be one of {', '.join(allowed)}", param=name)
    return value


E = TypeVar("E", bound=StrEnum)


def enum_choice(request: Request, name: str, values: type[E]) -> E | None:
    """An optional filter among an enum's values (absent or empty: None); any other value is a 400."""
    value = choice(request, name, ("", *values), "")
    return values(value) if value else None


def optional_text(request: Request, name: str, *, max_len: int = 200) -> str | None:
    value = (request.query_params.get(name) or "").strip()
    if not value:
        return None
    if len(value) > max_len:
        raise InvalidParameters(f"{name} is too long (at most {max_len} characters)", param=name)
    return value


def utc_minute(request: Request, name: str) -> int | None:
    """A `datetime-local` field (YYYY-MM-DDTHH:MM, read as UTC) as UNIX milliseconds."""
    raw = (request.query_params.get(name) or "").strip()
    if not raw:
        return None
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        raise InvalidParameters(f"{name} must be a date and time (YYYY-MM-DDTHH:MM, UTC)", param=name) from None
    if not 1970 <= parsed.year <= 9999:
        raise InvalidParameters(f"{name} is out of range", param=name)
    return int(parsed.replace(tzinfo=UTC).timestamp() * 1000)


def as_field(ms: int) -> str:
    """UNIX milliseconds as a `datetime-local` value (UTC)."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M")


def cursor(request: Request, name: str = "before", raw: str | None = None) -> tuple[int, str] | None:
    """A page cursor `<ms>~<id>` (from the query, or `raw`); a malformed one is a 400."""
    raw = raw if raw is not None else request.query_params.get(name)
    if not raw:
        return None
    ms, sep, row_id = raw.partition("~")
    at = plain_int(ms) if len(ms) <= 16 else None
    if not sep or at is None or not row_id or len(row_id) > 64:
        raise InvalidParameters(f"{name} is not a valid page cursor", param=name)
    return at, row_id


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    # Text a spreadsheet would run as a formula (model names, user ids and errors come from clients).
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def csv_response(filename: str, header: Sequence[str], rows: Iterable[Sequence[object]]) -> StreamingResponse:
    def lines() -> Iterator[str]:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(header)
        for row in rows:
            writer.writerow([csv_cell(v) for v in row])
            if buffer.tell() > 64 * 1024:
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
        yield buffer.getvalue()

    return StreamingResponse(
        lines(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
