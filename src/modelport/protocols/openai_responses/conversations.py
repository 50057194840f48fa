"""The Conversations API's wire shapes (`/v1/conversations`, the `conversation` field of a Responses
request): the protocol's side of `core.codec.ConversationWire`; the gateway keeps the rows
(`responses_store/conversations.py`, routes in `gateway/conversations.py`)."""

from __future__ import annotations

import secrets
from typing import Any

from modelport.core.codec import ConversationWire
from modelport.errors import InvalidParameters, NotFound
from modelport.protocols.openai_responses.listing import listed_message, page

# The protocol's limits: items per create or add call, metadata keys and the length of a key and a value.
MAX_ITEMS_PER_CALL = 20
MAX_METADATA_KEYS = 16
MAX_METADATA_KEY = 64
MAX_METADATA_VALUE = 512


def conversation_ref(body: dict[str, Any]) -> str | None:
    """The conversation a Responses request names: an id, or `{"id": ...}` (None: none). With
    `previous_response_id` too it is refused: the two are the same state kept two ways."""
    ref = body.get("conversation")
    if ref is None:
        return None
    if isinstance(ref, dict):
        ref = ref.get("id")
    if not isinstance(ref, str) or not ref:
        raise InvalidParameters("conversation must be a conversation id or an object with an id", param="conversation")
    if body.get("previous_response_id") is not None:
        raise InvalidParameters(
            "conversation and previous_response_id cannot be used together", param="previous_response_id"
        )
    return ref


def _metadata(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > MAX_METADATA_KEYS:
        raise InvalidParameters(f"metadata must be an object of at most {MAX_METADATA_KEYS} keys", param="metadata")
    for key, text in value.items():
        if len(key) > MAX_METADATA_KEY or not isinstance(text, str) or len(text) > MAX_METADATA_VALUE:
            raise InvalidParameters(
                f"metadata keys are at most {MAX_METADATA_KEY} characters and values strings of at most "
                f"{MAX_METADATA_VALUE}",
                param="metadata",
            )
    return dict(value)


def _items(value: Any, *, required: bool) -> list[dict[str, Any]]:
    if value is None and not required:
        return []
    if not isinstance(value, list) or len(value) > MAX_ITEMS_PER_CALL or (required and not value):
        raise InvalidParameters(
            f"items must be a list of 1 to {MAX_ITEMS_PER_CALL} items" if required else "items must be a list",
            param="items",
        )
    if not all(isinstance(item, dict) for item in value):
        raise InvalidParameters("each item must be an object", param="items")
    return [listed_item(item) for item in value]


def create_body(body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`POST /v1/conversations`: (metadata, the first items)."""
    return _metadata(body.get("metadata")), _items(body.get("items"), required=False)


def update_body(body: dict[str, Any]) -> dict[str, Any]:
    """`POST /v1/conversations/{id}`: the new metadata."""
    if "metadata" not in body:
        raise InvalidParameters("metadata is required", param="metadata")
    return _metadata(body.get("metadata"))


def add_items_body(body: dict[str, Any]) -> list[dict[str, Any]]:
    """`POST /v1/conversations/{id}/items`: the items to add."""
    return _items(body.get("items"), required=True)


def listed_item(item: dict[str, Any]) -> dict[str, Any]:
    """An item as a conversation lists it: a message typed, with a status and its content as parts."""
    return listed_message(item) if item.get("type", "message") == "message" else dict(item)


def turn_items(own: list[Any], response: dict[str, Any]) -> list[dict[str, Any]]:
    """What a response adds to its conversation: its request's own input items, then its output items."""
    output = response.get("output")
    added = [*own, *(output if isinstance(output, list) else [])]
    return [listed_item(item) for item in added if isinstance(item, dict)]


def new_item_id(item: dict[str, Any]) -> str:
    prefix = "msg" if item.get("type", "message") == "message" else "item"
    return f"{prefix}_{secrets.token_hex(24)}"


def conversation_object(conversation_id: str, created_at_ms: int, metadata: dict[str, Any]) -> dict[str, Any]:
    return {"id": conversation_id, "object": "conversation", "created_at": created_at_ms // 1000, "metadata": metadata}


def conversation_deleted(conversation_id: str) -> dict[str, Any]:
    return {"id": conversation_id, "object": "conversation.deleted", "deleted": True}


def item_list(items: list[dict[str, Any]]) -> dict[str, Any]:
    """The answer to an add: the items added, as one page."""
    return {
        "object": "list",
        "data": items,
        "first_id": items[0]["id"] if items else None,
        "last_id": items[-1]["id"] if items else None,
        "has_more": False,
    }


def unknown_conversation(conversation_id: str) -> Exception:
    return NotFound(f"Conversation with id '{conversation_id}' not found.", param="conversation")


def unknown_item(item_id: str) -> Exception:
    return NotFound(f"Item with id '{item_id}' not found.", param="item_id")


CONVERSATION_WIRE = ConversationWire(
    conversation_ref=conversation_ref,
    create_body=create_body,
    update_body=update_body,
    add_items_body=add_items_body,
    turn_items=turn_items,
    new_item_id=new_item_id,
    conversation_object=conversation_object,
    deleted=conversation_deleted,
    item_list=item_list,
    page=page,
    unknown_conversation=unknown_conversation,
    unknown_item=unknown_item,
)
