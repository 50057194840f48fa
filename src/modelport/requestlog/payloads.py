"""The `input` and `result` payloads of a log row, kept for teams that keep them (`teams.log_retention`, a
public name: the word here is "payload keeping", not retention, which is how long rows live: `retention/`).

A payload is JSON text of at most `max_bytes` UTF-8 bytes. A larger one is replaced by a marker that is
still valid JSON and within the cap:

    {"truncated": true, "size_bytes": <size of the full JSON>, "preview": "<start of the JSON text>"}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

DEFAULT_MAX_BYTES = 64 * 1024
MIN_MAX_BYTES = 256


@dataclass(frozen=True, slots=True)
class PayloadPolicy:
    enabled: bool
    max_bytes: int = DEFAULT_MAX_BYTES

    def __post_init__(self) -> None:
        if self.max_bytes < MIN_MAX_BYTES:
            raise ValueError(f"max_bytes must be at least {MIN_MAX_BYTES}")

    def payload(self, value: Any) -> str | None:
        """A Python value (a request or response body as dicts and lists) as capped JSON text."""
        if not self.enabled:
            return None
        encoded = orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS)
        return self._capped(encoded)

    def payload_from_json(self, raw: bytes | str) -> str | None:
        """A body already in JSON form (e.g. the raw request bytes); text that is not JSON is kept as a string."""
        if not self.enabled:
            return None
        data = raw.encode("utf-8", "replace") if isinstance(raw, str) else raw
        try:
            orjson.loads(data)
        except orjson.JSONDecodeError:
            data = orjson.dumps(data.decode("utf-8", "replace"))
        return self._capped(data)

    def _capped(self, encoded: bytes) -> str:
        if len(encoded) <= self.max_bytes:
            return encoded.decode("utf-8")
        text = encoded[: self.max_bytes].decode("utf-8", "ignore")
        # The longest preview whose marker fits: escaping makes the size per character vary, so search.
        low, high = 0, len(text)
        while low < high:
            middle = (low + high + 1) // 2
            if len(self._marker(len(encoded), text[:middle])) <= self.max_bytes:
                low = middle
            else:
                high = middle - 1
        return self._marker(len(encoded), text[:low]).decode("utf-8")

    @staticmethod
    def _marker(size: int, preview: str) -> bytes:
        return orjson.dumps({"truncated": True, "size_bytes": size, "preview": preview})
