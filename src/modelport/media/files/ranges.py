"""HTTP `Range: bytes=...` parsing for downloads (RFC 9110 §14).

One range is served as 206. A header we do not understand, or one asking for several ranges, is
ignored and the whole file is sent (the RFC allows this). A range that starts past the end is 416.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from modelport.errors import RangeNotSatisfiable
from modelport.strict_int import MAX_INT, plain_int

# More digits than any file size (`strict_int.MAX_DIGITS`): such a position is "past the end" (never parsed:
# Python refuses to parse ints over 4,300 digits, and no size needs 19).
_BEYOND = MAX_INT + 1

_SINGLE = re.compile(r"^\s*bytes\s*=\s*([0-9]*)\s*-\s*([0-9]*)\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ByteRange:
    start: int
    end: int  # exclusive

    @property
    def length(self) -> int:
        return self.end - self.start

    def content_range(self, size: int) -> str:
        return f"bytes {self.start}-{self.end - 1}/{size}"


def parse_range(header: str | None, size: int) -> ByteRange | None:
    """The one range to serve, None for the whole file, or RangeNotSatisfiable."""
    if not header:
        return None
    match = _SINGLE.match(header)
    if match is None:
        return None
    first, last = _position(match.group(1)), _position(match.group(2))
    if first is None and last is None:
        return None
    if first is None:
        # Suffix range: the last N bytes.
        assert last is not None
        suffix = last
        if suffix == 0 or size == 0:
            raise _unsatisfiable(size)
        return ByteRange(max(size - suffix, 0), size)
    start = first
    if last is not None and last < start:
        return None  # invalid range-spec: ignore the header
    if start >= size:
        raise _unsatisfiable(size)
    end = min(last + 1, size) if last is not None else size
    return ByteRange(start, end)


def _position(digits: str) -> int | None:
    if not digits:
        return None
    position = plain_int(digits)
    return _BEYOND if position is None else position


def _unsatisfiable(size: int) -> RangeNotSatisfiable:
    return RangeNotSatisfiable(f"the file has {size} bytes", headers={"Content-Range": f"bytes */{size}"})
