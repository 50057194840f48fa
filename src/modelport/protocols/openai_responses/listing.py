"""Items as the protocol lists them (a stored response's input items, a conversation's items) and one page
of such a list."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def listed_message(item: dict[str, Any]) -> dict[str, Any]:
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
