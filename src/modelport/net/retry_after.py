"""`Retry-After` read leniently: from a receiver or provider we do not control, any value may come.

delta-seconds (ASCII digits, a decimal tolerated) or an HTTP date; anything else (`²`, `-5`, `soon`,
a date that does not parse) is None, never an exception, so an odd header cannot stop the caller.
"""

from __future__ import annotations

import email.utils
import math
import re
import time

_SECONDS = re.compile(r"[0-9]{1,12}(?:\.[0-9]{1,6})?")


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds from now, at least 0; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if _SECONDS.fullmatch(value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
        seconds = when.timestamp() - time.time()
    except (TypeError, ValueError, IndexError, OverflowError, OSError):
        return None
    return max(0.0, seconds) if math.isfinite(seconds) else None
