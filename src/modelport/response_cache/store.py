"""What a response cache store does (Redis, `redis_store.py`, or the local database, `db_store.py`): the
entry of a team's digest, a new one stored under the size bound, a team's entries purged."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Stored:
    """What storing an entry did: the teams of the entries evicted to make room (one per entry), and the
    bytes the storing team's entries take now."""

    evicted: list[str] = field(default_factory=list)
    team_bytes: int = 0


class CacheStore(Protocol):
    async def get(self, team_id: str, digest: str, now_ms: int) -> bytes | None:
        """The entry's bytes unless absent or expired; a hit counts as a use (least recently used order)."""
        ...

    async def put(self, team_id: str, digest: str, value: bytes, expires_at_ms: int, now_ms: int) -> Stored:
        """Store (or replace) an entry served until `expires_at_ms`, evicting the least recently used
        entries of any team while the store is over its size bound."""
        ...

    async def purge(self, team_id: str) -> int:
        """Remove every entry of the team; how many there were."""
        ...

    async def team_bytes(self, team_id: str) -> int: ...

    async def aclose(self) -> None: ...
