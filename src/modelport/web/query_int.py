"""The one strict integer parser of query parameters (and other integers a client writes as text).

`str.isdigit()` is true for `²` and other Unicode digits that `int()` refuses (and `int()` takes `٣`,
`+5`, ` 5`, `5_000`), so a check with the one and a conversion with the other turned odd numbers into 500s.
Here an integer is ASCII digits only, with an optional leading `-` where negatives make sense, and a
bounded number of digits; anything else is None, or a 400 naming the parameter.
"""

from __future__ import annotations

import re

from modelport.errors import InvalidParameters

MAX_DIGITS = 18  # always inside signed 64 bits
MAX_QUERY_INT = 10**MAX_DIGITS - 1
_UNSIGNED = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")
_SIGNED = re.compile(rf"-?[0-9]{{1,{MAX_DIGITS}}}")


def plain_int(raw: str | None, *, signed: bool = False) -> int | None:
    """`raw` as an integer if it is one written plainly (ASCII digits, `-` first when `signed`), else None."""
    if raw is None:
        return None
    return int(raw) if (_SIGNED if signed else _UNSIGNED).fullmatch(raw) else None


def query_int(raw: str | None, name: str, *, low: int, high: int, default: int | None = None) -> int | None:
    """A query parameter's integer: `default` when absent or empty, a 400 naming it when it is not an
    integer from `low` to `high`."""
    if raw is None or raw == "":
        return default
    value = plain_int(raw.strip(), signed=True)
    if value is None:
        raise InvalidParameters(f"{name} must be an integer", param=name)
    if not low <= value <= high:
        raise InvalidParameters(f"{name} must be between {low} and {high}", param=name)
    return value
