"""Stored Responses on the text gateway (issue 43, docs/api/stored-responses.md).

For a protocol whose clients keep state at the server (`codec.server_state`: Responses), before the body
is decoded its reference to an earlier response (`previous_response_id`) is resolved here: the stored
chain's items (oldest first) go before the new input in the body itself, so every upstream kind gets the
earlier turns (translated like any input; a Responses upstream gets the items, not the id). When the
request asks to be kept (`store`, true by default) the answer the client gets is kept at the end: a whole
body before it is sent, a stream before the event that carries its final response is relayed, so the next
turn finds it. Requests of other protocols do no store work.

`GET /v1/responses/{id}`, `GET /v1/responses/{id}/input_items` and `DELETE /v1/responses/{id}` answer
from the same store, the team's own responses only.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Query
from starlette.requests import Request
from starlette.responses import Response

from modelport.core.codec import ProtocolCodec, ServerState
from modelport.core.sse_skim import SSESkimmer
from modelport.errors import NotFound
from modelport.gateway import background_responses
from modelport.gateway.answer import Chunks
from modelport.protocols import CODECS
from modelport.responses_store.conversations import ConversationStore
from modelport.responses_store.items import DEFAULT_PAGE, MAX_PAGE, chained_items
from modelport.responses_store.plan import ToKeep
from modelport.responses_store.store import ResponseStore
from modelport.services import ServiceKey
from modelport.web.deps import get_services, text_auth
from modelport.web.envelope import JSONBytesResponse
from modelport.web.query_limit import enforce_query_limit

log = logging.getLogger("modelport.responses")

router = APIRouter(tags=["text"])


def _state_codec() -> tuple[ProtocolCodec, ServerState]:
    """The one protocol that keeps state at the server, and its state (the routes below are its own)."""
    ((codec, state),) = ((c, c.server_state) for c in CODECS.values() if c.server_state is not None)
    return codec, state


STATE_CODEC, STATE = _state_codec()
STORED_RESPONSES: ServiceKey[StoredResponses] = ServiceKey("stored responses")


class StoredResponses:
    def __init__(self, store: ResponseStore, conversations: ConversationStore) -> None:
        self.store = store
        self.conversations = conversations

    async def prepare(
        self, state: ServerState, team_id: str, body: dict[str, Any], raw: bytes
    ) -> tuple[dict[str, Any], bytes, ToKeep | None]:
        """The body to decode and forward (the earlier items before the input when it refers to an earlier
        response or a conversation; 404 for one the team does not have) and what the request refers to and
        keeps of the answer (None: nothing)."""
        previous = state.previous_id(body)
        wire = state.conversations
        conversation = wire.conversation_ref(body) if wire is not None else None
        own = state.input_items(body)
        earlier: list[Any] | None = None
        if previous is not None:
            chain = await self.store.chain(team_id, previous)
            if chain is None:
                raise state.unknown_previous(previous)
            earlier = chained_items(chain, state.output_items)
        elif conversation is not None and wire is not None:
            earlier = await self.conversations.items(team_id, conversation, touch=True)
            if earlier is None:
                raise wire.unknown_conversation(conversation)
        if earlier is not None:
            body = state.chain(body, earlier)
            raw = orjson.dumps(body)
        store = state.keeps(body)
        if not store and previous is None and conversation is None:
            return body, raw, None
        return body, raw, ToKeep(team_id, previous, own, store=store, conversation_id=conversation)

    async def keep_body(self, state: ServerState, keep: ToKeep, content: bytes) -> None:
        """Keep a whole answer (before it is sent)."""
        if not keep.saves:
            return
        try:
            response = orjson.loads(content)
        except orjson.JSONDecodeError:
            return
        if isinstance(response, dict):
            await self._save(state, keep, response)

    def keeping(self, state: ServerState, chunks: Chunks, keep: ToKeep) -> Chunks:
        """The stream's chunks, its final response kept before the chunk that carries it is relayed."""
        return _KeptStream(self, state, chunks, keep) if keep.saves else chunks

    async def _save(self, state: ServerState, keep: ToKeep, response: dict[str, Any]) -> None:
        rid = state.response_id(response)
        if rid is None:
            return
        try:
            if keep.store:
                await self.store.save(keep.team_id, rid, keep.previous_id, keep.input_items, response)
            wire = state.conversations
            if keep.conversation_id is not None and wire is not None:
                added = wire.turn_items(keep.input_items, response)
                await self.conversations.append(keep.team_id, keep.conversation_id, added, wire.new_item_id)
        except Exception:
            log.exception("keeping response %s failed", rid)


class _KeptStream:
    __slots__ = ("_chunks", "_gen", "_keep", "_owner", "_state")

    def __init__(self, owner: StoredResponses, state: ServerState, chunks: Chunks, keep: ToKeep) -> None:
        self._owner = owner
        self._state = state
        self._chunks = chunks
        self._keep = keep
        self._gen = self._run()

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._gen

    async def aclose(self) -> None:
        try:
            await self._gen.aclose()
        finally:
            await self._chunks.aclose()

    async def _run(self) -> AsyncGenerator[bytes, None]:
        # Only the final event matters here, and the relay parses the stream for the client anyway.
        parser = SSESkimmer(self._state.final_markers)
        kept = False
        async for chunk in self._chunks:
            if not kept:
                for sse in parser.feed(chunk):
                    response = self._state.final_response(sse.event, sse.data)
                    if response is not None:
                        await self._owner._save(self._state, self._keep, response)
                        kept = True
            yield chunk


# ---------------------------------------------------------------- routes

_PATH = STATE_CODEC.route.path + "/{response_id}"


def _not_found(response_id: str) -> NotFound:
    return NotFound(f"Response with id '{response_id}' not found.", param="response_id")


def _store(request: Request) -> ResponseStore:
    return get_services(request)[STORED_RESPONSES].store


@router.get(_PATH, summary="Get a stored response")
async def get_response(
    request: Request,
    response_id: str,
    stream: bool = False,
    starting_after: Annotated[int | None, Query(ge=-1)] = None,
) -> Response:
    """A stored response; a background one as it is now (`stream`: its events after `starting_after`)."""
    auth = await text_auth(request)
    headers = await enforce_query_limit(request, auth)
    running = await background_responses.answer_get(
        request, auth, response_id, stream=stream, starting_after=starting_after
    )
    if running is not None:
        return running
    stored = await _store(request).get(auth.team_id, response_id)
    if stored is None:
        raise _not_found(response_id)
    return JSONBytesResponse(stored.response, headers=headers)


@router.get(_PATH + "/input_items", summary="List a stored response's input items")
async def list_input_items(
    request: Request,
    response_id: str,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = DEFAULT_PAGE,
    after: str | None = None,
    order: Literal["asc", "desc"] = "desc",
) -> Response:
    auth = await text_auth(request)
    headers = await enforce_query_limit(request, auth)
    stored = await _store(request).get(auth.team_id, response_id)
    if stored is None:
        raise _not_found(response_id)
    return JSONBytesResponse(STATE.items_page(stored.id, stored.input_items, limit, after, order), headers=headers)


@router.delete(_PATH, summary="Delete a stored response")
async def delete_response(request: Request, response_id: str) -> Response:
    auth = await text_auth(request)
    headers = await enforce_query_limit(request, auth)
    kept = await _store(request).delete(auth.team_id, response_id)
    ran = await get_services(request)[background_responses.BACKGROUND_RESPONSES].store.delete(auth.team_id, response_id)
    if not (kept or ran):
        raise _not_found(response_id)
    return JSONBytesResponse(STATE.deleted(response_id), headers=headers)
