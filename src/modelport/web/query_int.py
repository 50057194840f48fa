"""Integer query parameters, read with the one strict integer parser (`modelport.strict_int`)."""

from __future__ import annotations

from modelport.strict_int import MAX_DIGITS, MAX_INT, bounded_int, plain_int

__all__ = ["MAX_DIGITS", "MAX_QUERY_INT", "plain_int", "query_int"]

MAX_QUERY_INT = MAX_INT


def query_int(raw: str | None, name: str, *, low: int, high: int, default: int | None = None) -> int | None:
    """A query parameter's integer: `default` when absent or empty, a 400 naming it when it is not an
    integer from `low` to `high`."""
    if raw is None or raw == "":
        return default
    return bounded_int(raw, name, low=low, high=high)
