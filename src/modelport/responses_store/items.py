"""Items of stored Responses, without storage: a request's input as items, the items a chain sends before
the new input, and the pages of `GET /v1/responses/{id}/input_items`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MAX_PAGE = 100
DEFAULT_PAGE = 20


@dataclass(frozen=True, slots=True)
class Stored:
    """One stored response: its id, the response it answered from (None: the chain's start), the input
    items its request sent, and the response object as the client got it."""

    id: str
    previous_id: str | None
    input_items: list[Any]
    response: dict[str, Any]


def input_items(value: Any) -> list[Any]:
    """A request's `input` as items: a string is one user message."""
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": value}]}]
    return list(value) if isinstance(value, list) else []


def chained_items(chain: Sequence[Stored]) -> list[Any]:
    """The items a chain sends before a new input: each stored response's input items, then its output
    items, oldest first (`chain` as `ResponseStore.chain` returns it)."""
    items: list[Any] = []
    for stored in chain:
        items.extend(stored.input_items)
        output = stored.response.get("output")
        if isinstance(output, list):
            items.extend(output)
    return items


def with_ids(response_id: str, items: Sequence[Any]) -> list[Any]:
    """Input items as listed: each with an id (its own, or one made from the response id and its place,
    the same on every read)."""
    tail = response_id.split("_", 1)[-1]
    listed: list[Any] = []
    for i, item in enumerate(items):
        if isinstance(item, dict):
            item = item if isinstance(item.get("id"), str) else {"id": f"msg_{tail}_{i}", **item}
            if item.get("type", "message") == "message":
                item = _listed_message(item)
        listed.append(item)
    return listed


def _listed_message(item: dict[str, Any]) -> dict[str, Any]:
    """A message as the protocol lists it: typed, with a status, its text content as one part."""
    item = {**item, "type": "message"}
    item.setdefault("status", "completed")
    if isinstance(item.get("content"), str):
        kind = "output_text" if item.get("role") == "assistant" else "input_text"
        item["content"] = [{"type": kind, "text": item["content"]}]
    return item


def page(items: Sequence[Any], *, limit: int, after: str | None, order: str) -> dict[str, Any]:
    """One page of a list in the protocol's shape: `order` desc lists the last item first; `after` is the id
    of the item the page starts after (unknown: an empty page)."""
    ordered = list(reversed(items)) if order == "desc" else list(items)
    if after is not None:
        ids = [item.get("id") if isinstance(item, dict) else None for item in ordered]
        ordered = ordered[ids.index(after) + 1 :] if after in ids else []
    data = ordered[:limit]
    return {
        "object": "list",
        "data": data,
        "first_id": data[0].get("id") if data else None,
        "last_id": data[-1].get("id") if data else None,
        "has_more": len(ordered) > limit,
    }
