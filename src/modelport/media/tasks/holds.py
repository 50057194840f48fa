"""How many long-lived requests each team holds open in this process: live status streams
(`GET /api/v1/tasks/{id}/events`) and `Prefer: wait` creations, capped at `tasks.max_streams_per_team`.

Both cost the team nothing and hold a connection for as long as they run, so without a cap one team could
take every connection a process accepts. The count is per process (an in-memory dict, no database or Redis
round trip on the way in): with N serving processes a team can hold N times the cap, each process still
keeping its connections for the others.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import ContentStream, StreamingResponse
from starlette.types import Receive, Scope, Send

from modelport.errors import RequestLimited

RETRY_AFTER_SECONDS = 5


class Hold:
    """One taken place; `release` gives it back (idempotent)."""

    def __init__(self, holds: TeamHolds, team_id: str) -> None:
        self._holds = holds
        self._team_id = team_id
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._holds._give_back(self._team_id)


class TeamHolds:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: dict[str, int] = {}

    def open(self, team_id: str) -> int:
        return self._open.get(team_id, 0)

    def take(self, team_id: str) -> Hold:
        """A place for one more stream or wait of the team; 429 when it holds `limit` already."""
        taken = self._open.get(team_id, 0)
        if taken >= self.limit:
            raise RequestLimited(
                f"the team already holds {self.limit} live status streams and Prefer: wait requests open on this"
                " server process, the most it may; close one, or poll GET /api/v1/tasks/{task_id}",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        self._open[team_id] = taken + 1
        return Hold(self, team_id)

    def _give_back(self, team_id: str) -> None:
        left = self._open.get(team_id, 0) - 1
        if left > 0:
            self._open[team_id] = left
        else:
            self._open.pop(team_id, None)


class HeldStream(StreamingResponse):
    """A streaming response that gives its hold back when it ends, however it ends (the stream finished, the
    client left, the server cut it): the place is released by the response, not by its body's generator,
    which may never start when the client is gone before the first byte."""

    def __init__(self, content: ContentStream, hold: Hold, **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._hold = hold

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._hold.release()
