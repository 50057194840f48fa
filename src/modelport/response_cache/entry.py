"""One stored answer: the body the client's protocol answered with, what it cost, when it was stored and
until when it is served. Serialised as one JSON object (its size counts against the store's bound)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class Entry:
    # The answer as a non-streaming body of the client's protocol (a stream's accumulated answer, encoded).
    body: dict[str, Any]
    # The original answer's cost in micro-USD (a hit costs a share of it).
    cost_micros: int
    stored_at_ms: int
    expires_at_ms: int

    def dumps(self) -> bytes:
        return orjson.dumps({"b": self.body, "c": self.cost_micros, "s": self.stored_at_ms, "e": self.expires_at_ms})

    @classmethod
    def loads(cls, raw: bytes) -> Entry | None:
        """The entry, or None for bytes that are not one (written by another version: a miss)."""
        try:
            data = orjson.loads(raw)
            return cls(data["b"], int(data["c"]), int(data["s"]), int(data["e"]))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None
