"""The one strict integer parser of text a client writes: query parameters, headers and form fields.

`str.isdigit()` is true for `²` and other Unicode digits that `int()` refuses (and `int()` takes `٣`,
`+5`, ` 5`, `5_000`), so a check with the one and a conversion with the other turned odd numbers into 500s.
Here an integer is ASCII digits only, with an optional leading `-` where negatives make sense, and a
bounded number of digits; anything else is None, or a 400 naming the field.
"""

from __future__ import annotations

import re

from modelport.errors import InvalidParameters

MAX_DIGITS = 18  # always inside signed 64 bits
MAX_INT = 10**MAX_DIGITS - 1
_UNSIGNED = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")
_SIGNED = re.compile(rf"-?[0-9]{{1,{MAX_DIGITS}}}")


def plain_int(raw: str | None, *, signed: bool = False) -> int | None:
    """`raw` as an integer if it is one written plainly (ASCII digits, `-` first when `signed`), else None."""
    if raw is None:
        return None
    return int(raw) if (_SIGNED if signed else _UNSIGNED).fullmatch(raw) else None


def bounded_int(raw: str, name: str, *, low: int, high: int, refusal: str | None = None) -> int:
    """`raw` (surrounding spaces ignored) as an integer from `low` to `high`, else a 400 naming `name`, with
    `refusal` as its message when given."""
    value = plain_int(raw.strip(), signed=True)  # a negative one is then "between", not "not an integer"
    if value is None or not low <= value <= high:
        message = refusal or (
            f"{name} must be an integer" if value is None else f"{name} must be between {low} and {high}"
        )
        raise InvalidParameters(message, param=name)
    return value
