"""uvicorn's httptools protocol with the limits a public server needs, enforced before the app runs.

- The request line plus headers may take at most `max_header_bytes`: past it the client gets 431 in the
  host's error shape and the connection is closed. Bytes are counted as they arrive (httptools buffers a
  header until it is complete, so waiting for its callback would let one 64 MB header into memory) and
  the parser's callbacks add up what it has seen; nothing is parsed twice.
- A connection must finish its request line and headers within `header_timeout` of its first byte (or of
  being accepted), and a request body may not pause longer than `body_timeout` between reads: 408.
  Between requests the keep-alive timeout of uvicorn applies.
- At most `max_connections` connections per process, both hosts together. A new connection over the cap
  first evicts the longest-idle connection (one with no request in flight); when every connection is
  busy, the request is answered 503 and the connection closed.

uvicorn exposes no such settings for httptools (only h11's incomplete-event size), so the limits live in
this subclass of its protocol; see docs/architecture/limits.md.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from modelport.errors import ServiceError
from modelport.web.errors import Host, error_body

log = logging.getLogger("modelport.server")
# The attribute of a request cycle (uvicorn's `RequestResponseCycle`) holding what to call when its client
# hangs up mid-request (`web.disconnect.DisconnectWatch`): a call instead of a task waiting on `receive()`.
HANG_UP_HOOK = "modelport_on_hang_up"


class HeadersTooLarge(ServiceError):
    status = 431
    category = "Request header fields too large"
    error_type = "invalid_request_error"


class RequestTimeout(ServiceError):
    status = 408
    category = "Request timeout"
    error_type = "invalid_request_error"


class TooManyConnections(ServiceError):
    status = 503
    category = "Service unavailable"
    error_type = "api_error"


@dataclass
class ConnectionLimits:
    """The limits, and the set of open connections of this process (shared by both hosts' servers)."""

    max_header_bytes: int
    header_timeout: float
    body_timeout: float
    max_connections: int
    open: set[GuardedHttpToolsProtocol] = field(default_factory=set)
    evicted: int = 0
    refused: int = 0


def error_bytes(error: ServiceError, host: Host, extra_headers: dict[str, str] | None = None) -> bytes:
    """A whole HTTP/1.1 response that closes the connection, with the host's error body."""
    body = orjson.dumps(error_body(error, host))
    headers = {
        "content-type": "application/json",
        "content-length": str(len(body)),
        "connection": "close",
        **(extra_headers or {}),
    }
    head = b"".join(f"{k}: {v}\r\n".encode("latin-1") for k, v in headers.items())
    return STATUS_LINE[error.status] + head + b"\r\n" + body


def protocol_for(host: Host, limits: ConnectionLimits) -> type[GuardedHttpToolsProtocol]:
    """A protocol class for one host's uvicorn.Config(http=...)."""
    replies = {
        "431": error_bytes(
            HeadersTooLarge(f"the request line and headers exceed {limits.max_header_bytes} bytes"), host
        ),
        "408h": error_bytes(
            RequestTimeout(f"the request headers did not arrive within {limits.header_timeout:g} s"), host
        ),
        "408b": error_bytes(RequestTimeout(f"the request body paused for more than {limits.body_timeout:g} s"), host),
        "503": error_bytes(TooManyConnections("too many open connections; retry shortly"), host, {"retry-after": "1"}),
    }
    return type(f"Guarded{host.title()}Protocol", (GuardedHttpToolsProtocol,), {"limits": limits, "replies": replies})


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    limits: ConnectionLimits
    replies: dict[str, bytes]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True  # reading a request line and headers (or waiting for them)
        self._head_bytes = 0  # bytes received since this request's head began
        self._read_bytes = 0  # the size of the read being parsed
        self._parsed_bytes = 0  # what the parser reported of the url (headers: `_parsed_head_bytes`)
        self._in_body = False
        self._timer: asyncio.TimerHandle | None = None
        self._last_active = time.monotonic()
        self._over_cap = False

    # -- connection lifecycle

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        limits = self.limits
        if len(limits.open) >= limits.max_connections and not self._evict_idle():
            self._over_cap = True
        limits.open.add(self)
        super().connection_made(transport)
        # Over the cap: only long enough to read the request it will be refused.
        delay = min(1.0, limits.header_timeout) if self._over_cap else limits.header_timeout
        self._arm(delay, self._on_header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self.limits.open.discard(self)
        self._disarm()
        super().connection_lost(exc)
        cycle = self.cycle
        if cycle is not None and cycle.disconnected:
            hang_up = getattr(cycle, HANG_UP_HOOK, None)
            if hang_up is not None:
                hang_up()

    def data_received(self, data: bytes) -> None:
        self._last_active = time.monotonic()
        self._read_bytes = len(data)
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self.transport.is_closing():
            return
        if self._in_head and self._head_bytes > self.limits.max_header_bytes and self._head_not_done():
            self._reply_and_close("431")
        elif self._in_body:
            self._arm(self.limits.body_timeout, self._on_body_timeout)

    # -- parser callbacks (uvicorn's, plus counting)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._parsed_bytes = 0
        if self._timer is None:
            self._arm(self.limits.header_timeout, self._on_header_timeout)

    def on_url(self, url: bytes) -> None:
        self._parsed_bytes += len(url)
        super().on_url(url)

    def on_headers_complete(self) -> None:
        if self.transport.is_closing():
            return
        # What arrived bounds what was parsed: the head is added up only when that bound passes the cap (a
        # pipelined request's head may lie wholly in the current read, after `_head_bytes` was reset).
        bound = self._head_bytes + self._read_bytes
        self._in_head = False
        self._head_bytes = 0
        self._disarm()
        if bound > self.limits.max_header_bytes and self._parsed_head_bytes() > self.limits.max_header_bytes:
            # The whole head came in one read: refuse it here, before the app sees the request.
            self._reply_and_close("431")
            return
        if self._over_cap:
            self.limits.refused += 1
            log.warning("refused a request: %s connections open", len(self.limits.open))
            self._reply_and_close("503")
            return
        super().on_headers_complete()
        self._in_body = True
        self._arm(self.limits.body_timeout, self._on_body_timeout)

    def on_body(self, body: bytes) -> None:
        if not self.transport.is_closing():
            super().on_body(body)

    def on_message_complete(self) -> None:
        self._in_body = False
        self._in_head = True  # what arrives next is the next request's head
        self._head_bytes = 0
        self._disarm()
        if not self.transport.is_closing():
            super().on_message_complete()

    def send_400_response(self, msg: str) -> None:
        if not self.transport.is_closing():
            super().send_400_response(msg)

    def on_response_complete(self) -> None:
        self._last_active = time.monotonic()
        super().on_response_complete()

    # -- helpers

    def _parsed_head_bytes(self) -> int:
        """The request line and headers as parsed (added up only when the head may be over the cap: counting
        each header as it was parsed cost every request)."""
        return self._parsed_bytes + sum(len(name) + len(value) + 4 for name, value in self.headers)

    def _head_not_done(self) -> bool:
        return self._in_head and not self.transport.is_closing()

    def _busy(self) -> bool:
        return (self.cycle is not None and not self.cycle.response_complete) or bool(self.pipeline)

    def _evict_idle(self) -> bool:
        """Close the longest-idle connection with no request in flight; False when every one is busy."""
        idle = [c for c in self.limits.open if not c._busy() and not c.transport.is_closing()]
        if not idle:
            return False
        oldest = min(idle, key=lambda c: c._last_active)
        self.limits.evicted += 1
        oldest._disarm()
        oldest.transport.close()
        self.limits.open.discard(oldest)
        return True

    def _arm(self, delay: float, callback: Any) -> None:
        self._disarm()
        self._timer = self.loop.call_later(delay, callback)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_header_timeout(self) -> None:
        self._timer = None
        if self.transport.is_closing() or self._busy():
            return
        # A connection that never sent a byte is closed silently; one stuck mid-headers gets a 408.
        if self._head_bytes:
            self._reply_and_close("408h")
        else:
            self.transport.close()

    def _on_body_timeout(self) -> None:
        self._timer = None
        if self.transport.is_closing() or not self._in_body:
            return
        if self.flow.read_paused:
            # The app has not consumed what it has: not the client's fault.
            self._arm(self.limits.body_timeout, self._on_body_timeout)
            return
        if self.cycle is not None and not self.cycle.response_started:
            # The app sees a disconnect (connection_lost runs before its receive() returns).
            self.transport.write(self.replies["408b"])
        self.transport.close()

    def _reply_and_close(self, which: str) -> None:
        self._disarm()
        self.transport.write(self.replies[which])
        self.transport.close()
