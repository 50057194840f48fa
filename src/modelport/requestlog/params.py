"""The query of `GET /v1/logs`, checked by hand so that every violation is a 400 naming the parameter.

The window is inclusive at both ends on the seconds scale: a row is listed when
`start_time <= created_at <= end_time`, `created_at` being the UNIX second shown in the item.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from modelport.errors import InvalidParameters, MissingParameter
from modelport.web.query_int import plain_int

MAX_SPAN_SECONDS = 30 * 24 * 3600
DEFAULT_PAGE_SIZE = 10
MAX_PAGE_SIZE = 100
MAX_PAGE = 1_000_000_000
MAX_TIME = 253_402_300_799  # 9999-12-31T23:59:59Z: keeps millisecond arithmetic well inside 64 bits
# The X-Svc-User-Id rule (spec, Request headers).
SVC_USER_ID_RE = re.compile(r"[A-Za-z0-9_-]{8,128}")


@dataclass(frozen=True, slots=True)
class LogQuery:
    start_time: int
    end_time: int
    svc_user_id: str | None = None
    page: int = 1
    page_size: int = DEFAULT_PAGE_SIZE

    @property
    def lo_ms(self) -> int:
        """First millisecond of the window."""
        return self.start_time * 1000

    @property
    def hi_ms(self) -> int:
        """First millisecond after the window."""
        return (self.end_time + 1) * 1000

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.page_size


def _integer(name: str, raw: str | None, *, required: bool, default: int, low: int, high: int) -> int:
    if raw is None:
        if required:
            raise MissingParameter(f"{name} is required", param=name)
        return default
    number = plain_int(raw)
    if number is None:
        raise InvalidParameters(f"{name} must be an integer", param=name)
    if not low <= number <= high:
        raise InvalidParameters(f"{name} must be between {low} and {high}", param=name)
    return number


def parse_log_query(
    *,
    start_time: str | None,
    end_time: str | None,
    svc_user_id: str | None = None,
    page: str | None = None,
    page_size: str | None = None,
) -> LogQuery:
    start = _integer("start_time", start_time, required=True, default=0, low=0, high=MAX_TIME)
    end = _integer("end_time", end_time, required=True, default=0, low=0, high=MAX_TIME)
    if end <= start:
        raise InvalidParameters("end_time must be greater than start_time", param="end_time")
    if end - start > MAX_SPAN_SECONDS:
        raise InvalidParameters(
            f"end_time - start_time must be at most 30 days ({MAX_SPAN_SECONDS} seconds)", param="end_time"
        )
    if svc_user_id is not None and not SVC_USER_ID_RE.fullmatch(svc_user_id):
        raise InvalidParameters(
            "svc_user_id must be 8 to 128 characters of ASCII letters, digits, '-' or '_'", param="svc_user_id"
        )
    number = _integer("page", page, required=False, default=1, low=1, high=MAX_PAGE)
    size = _integer("page_size", page_size, required=False, default=DEFAULT_PAGE_SIZE, low=1, high=MAX_PAGE_SIZE)
    return LogQuery(start_time=start, end_time=end, svc_user_id=svc_user_id, page=number, page_size=size)
