"""Conversations on the text gateway (issue 43 item 4, docs/api/conversations.md): `/v1/conversations` and
its items, the team's own only, in the shapes of the protocol that keeps them (`ServerState.conversations`:
Responses). A `POST /v1/responses` naming a conversation is continued in `stored_responses.py`."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from starlette.requests import Request
from starlette.responses import Response

from modelport.core.codec import ConversationWire
from modelport.gateway.pipeline import read_json_body
from modelport.gateway.stored_responses import STATE, STORED_RESPONSES
from modelport.responses_store.conversations import Conversation, ConversationStore
from modelport.responses_store.items import DEFAULT_PAGE, MAX_PAGE
from modelport.web.deps import get_services, text_auth
from modelport.web.envelope import JSONBytesResponse
from modelport.web.query_limit import enforce_query_limit

router = APIRouter(tags=["text"])

assert STATE.conversations is not None
WIRE: ConversationWire = STATE.conversations
_PATH = "/v1/conversations"
_ONE = _PATH + "/{conversation_id}"


def _store(request: Request) -> ConversationStore:
    return get_services(request)[STORED_RESPONSES].conversations


def _shown(conversation: Conversation) -> dict[str, object]:
    return WIRE.conversation_object(conversation.id, conversation.created_at_ms, conversation.metadata)


@router.post(_PATH, summary="Create a conversation")
async def create_conversation(request: Request) -> Response:
    auth = await text_auth(request)
    headers = await enforce_query_limit(request, auth)
    metadata, items = WIRE.create_body(await read_json_body(request))
    made = await _store(request).create(auth.team_id, metadata, items, WIRE.new_item_id)
    return JSONBytesResponse(_shown(made), headers=headers)


@router.get(_ONE, summary="Get a conversation")
async def get_conversation(request: Request, conversation_id: str) -> Response:
    auth = await text_auth(request)
    headers = await enforce_query_limit(request, auth)
    found = await _store(request).get(auth.team_id, conversation_id)
    if found is None:
        raise WIRE.unknown_conversation(conversation_id)
    return JSONBytesResponse(_shown(found), headers=headers)


@router.post(_ONE, summary="Update a conversation's metadata")
async def update_conversation(request: Request, conversation_id: str) -> Response:
    auth = await text_auth(request)
    headers = await enforce_query_limit(request, auth)
    metadata = WIRE.update_body(await read_json_body(request))
    found = await _store(request).set_metadata(auth.team_id, conversation_id, metadata)
    if found is None:
        raise WIRE.unknown_conversation(conversation_id)
    return JSONBytesResponse(_shown(found), headers=headers)


@router.delete(_ONE, summary="Delete a conversation and its items")
async def delete_conversation(request: Request, conversation_id: str) -> Response:
    auth = await text_auth(request)
    headers = await enforce_query_limit(request, auth)
    if not await _store(request).delete(auth.team_id, conversation_id):
        raise WIRE.unknown_conversation(conversation_id)
    return JSONBytesResponse(WIRE.deleted(conversation_id), headers=headers)


@router.get(_ONE + "/items", summary="List a conversation's items")
async def list_items(
    request: Request,
    conversation_id: str,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = DEFAULT_PAGE,
    after: str | None = None,
    order: Literal["asc", "desc"] = "desc",
) -> Response:
    auth = await text_auth(request)
    headers = await enforce_query_limit(request, auth)
    items = await _store(request).items(auth.team_id, conversation_id)
    if items is None:
        raise WIRE.unknown_conversation(conversation_id)
    return JSONBytesResponse(WIRE.page(items, limit=limit, after=after, order=order), headers=headers)


@router.post(_ONE + "/items", summary="Add items to a conversation")
async def add_items(request: Request, conversation_id: str) -> Response:
    auth = await text_auth(request)
    headers = await enforce_query_limit(request, auth)
    items = WIRE.add_items_body(await read_json_body(request))
    added = await _store(request).append(auth.team_id, conversation_id, items, WIRE.new_item_id)
    if added is None:
        raise WIRE.unknown_conversation(conversation_id)
    return JSONBytesResponse(WIRE.item_list(added), headers=headers)


@router.get(_ONE + "/items/{item_id}", summary="Get a conversation item")
async def get_item(request: Request, conversation_id: str, item_id: str) -> Response:
    auth = await text_auth(request)
    headers = await enforce_query_limit(request, auth)
    store = _store(request)
    if await store.get(auth.team_id, conversation_id) is None:
        raise WIRE.unknown_conversation(conversation_id)
    item = await store.item(auth.team_id, conversation_id, item_id)
    if item is None:
        raise WIRE.unknown_item(item_id)
    return JSONBytesResponse(item, headers=headers)


@router.delete(_ONE + "/items/{item_id}", summary="Delete a conversation item")
async def delete_item(request: Request, conversation_id: str, item_id: str) -> Response:
    """Answers the conversation, as the protocol does."""
    auth = await text_auth(request)
    headers = await enforce_query_limit(request, auth)
    store = _store(request)
    found = await store.get(auth.team_id, conversation_id)
    if found is None:
        raise WIRE.unknown_conversation(conversation_id)
    if not await store.delete_item(auth.team_id, conversation_id, item_id):
        raise WIRE.unknown_item(item_id)
    return JSONBytesResponse(_shown(found), headers=headers)
