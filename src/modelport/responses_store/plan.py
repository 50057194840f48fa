"""What a `POST /v1/responses` refers to and will keep once answered (decided before the call, kept on the
context; the request log records the references)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ToKeep:
    """A request that refers to server-kept state or asks for its answer to be kept: its team, the response
    it follows (None: none), its own input items, whether the answer is stored (`store`), and the
    conversation its input and output items are added to (None: none)."""

    team_id: str
    previous_id: str | None
    input_items: list[Any]
    store: bool = True
    conversation_id: str | None = None

    @property
    def saves(self) -> bool:
        """The answer is kept somewhere (stored, or added to a conversation)."""
        return self.store or self.conversation_id is not None
