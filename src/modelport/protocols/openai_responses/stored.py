"""Responses state kept by the gateway (`store`, `previous_response_id`, the input items list): the
protocol's side of `core.codec.ServerState`; the gateway keeps the rows (`gateway/stored_responses.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from modelport.core.codec import ServerState
from modelport.errors import InvalidParameters, NotFound
from modelport.protocols.openai_responses.background import BACKGROUND_WIRE
from modelport.protocols.openai_responses.conversations import CONVERSATION_WIRE
from modelport.protocols.openai_responses.listing import listed_message, page

# The stream events that carry the final response object.
_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete"})
# The request fields that name state the gateway keeps: never sent on.
_SERVER_REFERENCES = frozenset({"previous_response_id", "conversation"})


def previous_id(body: dict[str, Any]) -> str | None:
    previous = body.get("previous_response_id")
    if previous is not None and not isinstance(previous, str):
        raise InvalidParameters("previous_response_id must be a string", param="previous_response_id")
    return previous


def keeps(body: dict[str, Any]) -> bool:
    """`store` defaults to true."""
    return body.get("store") is not False


def input_items(body: dict[str, Any]) -> list[Any]:
    """The request's `input` as items: a string is one user message."""
    value = body.get("input")
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": value}]}]
    return list(value) if isinstance(value, list) else []


def chain(body: dict[str, Any], earlier: list[Any]) -> dict[str, Any]:
    """The body with the earlier items before its input (an input of another type is left for the decoder
    to refuse) and no `previous_response_id` or `conversation` (the gateway keeps both)."""
    out = {k: v for k, v in body.items() if k not in _SERVER_REFERENCES}
    if isinstance(out.get("input"), str | list):
        out["input"] = earlier + input_items(body)
    return out


def output_items(response: dict[str, Any]) -> list[Any]:
    output = response.get("output")
    return list(output) if isinstance(output, list) else []


def final_response(event: str | None, data: str) -> dict[str, Any] | None:
    if event not in _FINAL_EVENTS and not (event is None and '"response.' in data):
        return None
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(parsed, dict) or parsed.get("type") not in _FINAL_EVENTS:
        return None
    response = parsed.get("response")
    return response if isinstance(response, dict) else None


def unknown_previous(previous: str) -> Exception:
    return NotFound(
        f"Previous response with id '{previous}' not found.",
        code="previous_response_not_found",
        param="previous_response_id",
    )


def response_id(response: dict[str, Any]) -> str | None:
    rid = response.get("id")
    return rid if isinstance(rid, str) else None


def with_ids(rid: str, items: Sequence[Any]) -> list[Any]:
    """Input items as listed: each with an id (its own, or one made from the response id and its place,
    the same on every read); a message typed, with a status, its string content as one part."""
    tail = rid.split("_", 1)[-1]
    listed: list[Any] = []
    for i, item in enumerate(items):
        if isinstance(item, dict):
            item = item if isinstance(item.get("id"), str) else {"id": f"msg_{tail}_{i}", **item}
            if item.get("type", "message") == "message":
                item = listed_message(item)
        listed.append(item)
    return listed


def items_page(rid: str, items: list[Any], limit: int, after: str | None, order: str) -> dict[str, Any]:
    return page(with_ids(rid, items), limit=limit, after=after, order=order)


def deleted(rid: str) -> dict[str, Any]:
    return {"id": rid, "object": "response.deleted", "deleted": True}


SERVER_STATE = ServerState(
    previous_id=previous_id,
    keeps=keeps,
    input_items=input_items,
    chain=chain,
    output_items=output_items,
    final_response=final_response,
    unknown_previous=unknown_previous,
    response_id=response_id,
    items_page=items_page,
    deleted=deleted,
    conversations=CONVERSATION_WIRE,
    background=BACKGROUND_WIRE,
    final_markers=tuple(sorted(name.encode() for name in _FINAL_EVENTS)),
)
