"""The streams this process is relaying, so that a shutdown can end them cleanly.

On SIGTERM the server lets in-flight requests run for the grace period; streams still running then are
cut here: their upstream read is aborted, and the relay ends the client's stream with the protocol's
error event, bills what was produced and logs the request as cut by shutdown (not "client disconnected").
"""

from __future__ import annotations

import logging

from modelport.upstreams.transport import UpstreamReply

log = logging.getLogger("modelport.gateway")

SHUTDOWN_CUT_MESSAGE = "The stream was cut short because the server is shutting down; retry the request."


class LiveStreams:
    def __init__(self) -> None:
        self._live: dict[int, UpstreamReply] = {}

    def __len__(self) -> int:
        return len(self._live)

    def add(self, reply: UpstreamReply) -> None:
        self._live[id(reply)] = reply

    def discard(self, reply: UpstreamReply) -> None:
        self._live.pop(id(reply), None)

    def cut_all(self, reason: str = SHUTDOWN_CUT_MESSAGE) -> int:
        replies = list(self._live.values())
        for reply in replies:
            reply.cut(reason)
        if replies:
            log.warning("shutdown: cut %d streams still running after the grace period", len(replies))
        return len(replies)
