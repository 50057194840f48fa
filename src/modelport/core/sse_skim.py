"""Finding one kind of event in an SSE stream without parsing every event before it.

The stored-response keeper needs only a stream's final event (Responses: `response.completed`), and the
relay parses the stream for the client already. Parsing it a second time cost the Responses stream about a
fifth of its opcodes (bench/opcount_profile.py). `SSESkimmer` keeps only the bytes since the last event
boundary and hands the events to a real `SSEParser` from the first chunk whose event so far holds one of
the markers, bytes every sought event contains (its name): a stream without them is never parsed. A marker
inside other text (a model writing the word) only starts the parsing early.
"""

from __future__ import annotations

from modelport.core.sse import SSEEvent, SSEParser

# Past this many bytes with no event boundary found (an upstream ending lines with a lone `\r`, or one
# enormous event), the rest is parsed as it comes: the kept tail stays bounded.
MAX_TAIL = 1 << 20


class SSESkimmer:
    __slots__ = ("_markers", "_parser", "_tail")

    def __init__(self, markers: tuple[bytes, ...]) -> None:
        self._markers = markers
        self._tail = b""  # the bytes since the last event boundary (or the stream's start)
        self._parser: SSEParser | None = None  # set once a marker was seen: every later byte is parsed

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """The events this chunk completed, from the first event that may hold a marker on."""
        if self._parser is not None:
            return self._parser.feed(chunk)
        data = self._tail + chunk if self._tail else chunk
        if not self._markers:
            return self._parse_from_here(data)
        found = [at for marker in self._markers if (at := data.find(marker)) >= 0]
        if found:  # from the start of the event that holds the first marker
            return self._parse_from_here(data[_after_last_boundary(data, min(found)) :])
        self._tail = data[_after_last_boundary(data) :]
        if len(self._tail) > MAX_TAIL:
            return self._parse_from_here(self._tail)
        return []

    def _parse_from_here(self, data: bytes) -> list[SSEEvent]:
        """`data` begins at an event boundary (or the stream's start): a fresh parser reads it as the
        stream's next event, and every chunk after it."""
        self._parser = SSEParser()
        self._tail = b""
        return self._parser.feed(data)


def _after_last_boundary(data: bytes, end: int | None = None) -> int:
    """Where the bytes after the last blank line before `end` begin (0: none found)."""
    end = len(data) if end is None else end
    lf, crlf = data.rfind(b"\n\n", 0, end), data.rfind(b"\r\n\r\n", 0, end)
    return max(lf + 2 if lf >= 0 else 0, crlf + 4 if crlf >= 0 else 0)
