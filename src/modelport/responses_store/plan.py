"""What a `POST /v1/responses` will keep once answered (decided before the call, kept on the context)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ToKeep:
    """A request with `store` true: its team, the response it follows (None: none) and its own input items."""

    team_id: str
    previous_id: str | None
    input_items: list[Any]
