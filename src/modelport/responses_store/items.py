"""Stored responses without storage: one as read, and the items a chain sends before a new input."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

MAX_PAGE = 100
DEFAULT_PAGE = 20


@dataclass(frozen=True, slots=True)
class Stored:
    """One stored response: its id, the response it followed (None: the chain's start), the input items
    its request sent, and the response object as the client got it."""

    id: str
    previous_id: str | None
    input_items: list[Any]
    response: dict[str, Any]


def chained_items(chain: Sequence[Stored], output_items: Callable[[dict[str, Any]], list[Any]]) -> list[Any]:
    """The items a chain sends before a new input: each stored response's input items, then its output
    items (`output_items`: the protocol's), oldest first (`chain` as `ResponseStore.chain` returns it)."""
    items: list[Any] = []
    for stored in chain:
        items.extend(stored.input_items)
        items.extend(output_items(stored.response))
    return items
