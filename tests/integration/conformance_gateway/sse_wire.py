"""Client-side reading of server-sent events, written independently of the gateway's own parser.

Events are split on blank lines; ``event:`` names and ``data:`` lines (joined by newlines) are kept,
comments and other fields dropped. Data stays verbatim (real servers pad lines with spaces), so compare
payloads with `WireEvent.payload`, which parses JSON and leaves ``[DONE]`` as the string.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True)
class WireEvent:
    event: str | None
    data: str

    @property
    def payload(self) -> Any:
        text = self.data.strip()
        return text if text == "[DONE]" else json.loads(text)

    @property
    def comparable(self) -> tuple[str | None, Any]:
        """(event name, parsed data): what "equal event by event" compares."""
        return self.event, self.payload


def parse_sse(text: str) -> list[WireEvent]:
    events: list[WireEvent] = []
    name: str | None = None
    data: list[str] = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if line == "":
            if data:
                events.append(WireEvent(name, "\n".join(data)))
            name, data = None, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    if data:
        events.append(WireEvent(name, "\n".join(data)))
    return events


def read_stream(response: httpx.Response) -> list[WireEvent]:
    """Every event of a streamed httpx response (the body is read to the end)."""
    assert response.status_code == 200, f"HTTP {response.status_code}: {response.read()!r}"
    content_type = response.headers.get("content-type", "")
    assert content_type.startswith("text/event-stream"), content_type
    return parse_sse("".join(response.iter_text()))
