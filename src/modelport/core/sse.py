"""Server-sent events: an incremental parser and the one frame writer (WHATWG SSE rules).

The parser takes raw bytes in arbitrary chunks and yields `SSEEvent`s. It handles ``\\r\\n``, ``\\r``
and ``\\n`` line ends (also split across chunks), multi-line ``data:``, comments (``:`` lines), a BOM,
and fields it does not know. Data is returned verbatim (servers may pad lines with spaces; JSON
parsing tolerates that, and ``[DONE]`` checks should strip).
"""

from __future__ import annotations

import re
from typing import NamedTuple

_LINE_END = re.compile(r"\r\n|\r|\n")


class SSEEvent(NamedTuple):
    """One event. A named tuple rather than a frozen dataclass: one is made per relayed event, and a tuple
    is made several times faster."""

    event: str | None
    data: str
    id: str | None = None


class SSEParser:
    def __init__(self) -> None:
        self._buffer = ""
        self._pending_cr = False
        self._started = False
        self._decoder_tail = b""
        self._event: str | None = None
        self._data: list[str] = []
        self._id: str | None = None
        self._has_data = False

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Parse a chunk; return the events it completed."""
        raw = self._decoder_tail + chunk
        text, self._decoder_tail = _decode_utf8_prefix(raw)
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        if not text:
            return []
        if self._pending_cr and text.startswith("\n"):
            # The "\r" that ended the last chunk was half of a "\r\n".
            text = text[1:]
        self._pending_cr = False
        self._buffer += text
        events: list[SSEEvent] = []
        pos = self._whole_events(events) if "\r" not in self._buffer else 0
        for match in _LINE_END.finditer(self._buffer, pos):
            self._handle_line(self._buffer[pos : match.start()], events)
            pos = match.end()
        if pos and pos == len(self._buffer) and self._buffer[pos - 1] == "\r":
            # A trailing "\r" may be the first half of a "\r\n" split across chunks.
            self._pending_cr = True
        self._buffer = self._buffer[pos:]
        return events

    def close(self) -> list[SSEEvent]:
        """End of input: a last event without its blank line is still dispatched."""
        events: list[SSEEvent] = []
        if self._buffer:
            self._handle_line(self._buffer, events)
            self._buffer = ""
        self._dispatch(events)
        return events

    def _whole_events(self, events: list[SSEEvent]) -> int:
        """The common shapes, a whole event at a time: `data: …` or `event: …` then `data: …`, each ended by a
        blank line, while no other event is half read (what nearly every upstream sends, parsed here without
        going line by line). Returns where the line-by-line parsing takes over. Needs a buffer without
        `\r`: its line ends are all `\n`."""
        buffer = self._buffer
        pos = 0
        while not self._has_data and self._event is None:
            end = buffer.find("\n\n", pos)
            if end < 0:
                break
            event: str | None = None
            data_at = pos
            line_end = buffer.find("\n", pos, end)
            if line_end >= 0:  # two lines or more: only `event:` + `data:` here
                if not buffer.startswith("event:", pos) or buffer.find("\n", line_end + 1, end) >= 0:
                    break
                event = buffer[pos + 6 : line_end]
                event = event[1:] if event.startswith(" ") else event
                data_at = line_end + 1
            if not buffer.startswith("data:", data_at):
                break
            data = buffer[data_at + 5 : end]
            events.append(SSEEvent(event or None, data[1:] if data.startswith(" ") else data, self._id))
            pos = end + 2
        return pos

    def _handle_line(self, line: str, events: list[SSEEvent]) -> None:
        if line == "":
            self._dispatch(events)
            return
        if line.startswith(":"):
            return
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._has_data = True
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value

    def _dispatch(self, events: list[SSEEvent]) -> None:
        if self._has_data:
            events.append(SSEEvent(self._event or None, "\n".join(self._data), self._id))
        self._event, self._data, self._has_data = None, [], False


def _decode_utf8_prefix(raw: bytes) -> tuple[str, bytes]:
    """Decode as much of `raw` as forms complete UTF-8; keep an incomplete trailing sequence."""
    for keep in range(min(3, len(raw)) + 1):
        try:
            head = raw[: len(raw) - keep] if keep else raw
            return head.decode("utf-8"), raw[len(raw) - keep :] if keep else b""
        except UnicodeDecodeError:
            continue
    return raw.decode("utf-8", errors="replace"), b""


def parse_sse(body: bytes | str) -> list[SSEEvent]:
    """Parse a complete SSE body."""
    parser = SSEParser()
    events = parser.feed(body.encode() if isinstance(body, str) else body)
    return events + parser.close()


def format_sse(data: str, event: str | None = None) -> bytes:
    """One SSE frame. Multi-line data becomes several ``data:`` lines."""
    lines = [f"event: {event}"] if event else []
    lines.extend(f"data: {line}" for line in data.split("\n"))
    return ("\n".join(lines) + "\n\n").encode()


def sse_frame(event: str | None, data: str | bytes) -> bytes:
    """One SSE frame: an optional ``event:`` line and one ``data:`` line (`data` must hold no line break:
    JSON as orjson or json.dumps writes it). On the fast path's every event: kept to one format and encode."""
    if isinstance(data, str):
        return (f"event: {event}\ndata: {data}\n\n" if event else f"data: {data}\n\n").encode()
    if event:
        return b"event: " + event.encode() + b"\ndata: " + data + b"\n\n"
    return b"data: " + data + b"\n\n"
