"""Stored Responses on the text gateway (issue 43, docs/api/stored-responses.md).

Before a `POST /v1/responses` is decoded, `previous_response_id` is resolved here: the stored chain's
items (oldest first) go before the new input in the body itself, so every upstream kind gets the earlier
turns (translated like any input; a Responses upstream gets the items, not the id). With `store` true (the
protocol's default) the response the client gets is kept at the end: a whole body before it is sent, a
stream before its `response.completed` (or `.incomplete`) event is relayed, so the next turn finds it.
Only Responses requests come here; other protocols do no store work.

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

from modelport.core.codec import ProtocolCodec
from modelport.core.sse import SSEParser
from modelport.errors import InvalidParameters, NotFound
from modelport.gateway.answer import Chunks
from modelport.protocols import CODECS
from modelport.responses_store.items import DEFAULT_PAGE, MAX_PAGE, chained_items, input_items, page, with_ids
from modelport.responses_store.plan import ToKeep
from modelport.responses_store.store import ResponseStore
from modelport.services import ServiceKey
from modelport.web.deps import get_services, text_auth
from modelport.web.envelope import JSONBytesResponse
from modelport.web.query_limit import enforce_query_limit

log = logging.getLogger("modelport.responses")
RESPONSES_CODEC: ProtocolCodec = CODECS["openai_responses"]
# The stream events that carry the final response object.
_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete"})

router = APIRouter(tags=["text"])
STORED_RESPONSES: ServiceKey[StoredResponses] = ServiceKey("stored responses")


class StoredResponses:
    def __init__(self, store: ResponseStore) -> None:
        self.store = store

    async def prepare(
        self, team_id: str, body: dict[str, Any], raw: bytes
    ) -> tuple[dict[str, Any], bytes, ToKeep | None]:
        """The body to decode and forward (the chain's items before the input when `previous_response_id`
        is set; 404 for one the team has not stored), and what to keep of the answer (None: `store` false)."""
        previous = body.get("previous_response_id")
        if previous is not None and not isinstance(previous, str):
            raise InvalidParameters("previous_response_id must be a string", param="previous_response_id")
        own = input_items(body.get("input"))
        if previous is not None:
            chain = await self.store.chain(team_id, previous)
            if chain is None:
                raise NotFound(
                    f"Previous response with id '{previous}' not found.",
                    code="previous_response_not_found",
                    param="previous_response_id",
                )
            body = {k: v for k, v in body.items() if k != "previous_response_id"}
            if isinstance(body.get("input"), str | list):
                body["input"] = chained_items(chain) + own
            raw = orjson.dumps(body)
        keep = None if body.get("store") is False else ToKeep(team_id, previous, own)
        return body, raw, keep

    async def keep_body(self, keep: ToKeep, content: bytes) -> None:
        """Keep a whole answer (before it is sent)."""
        try:
            response = orjson.loads(content)
        except orjson.JSONDecodeError:
            return
        await self._save(keep, response)

    def keeping(self, chunks: Chunks, keep: ToKeep) -> Chunks:
        """The stream's chunks, its final response kept before the chunk that carries it is relayed."""
        return _KeptStream(self, chunks, keep)

    async def _save(self, keep: ToKeep, response: Any) -> None:
        if not isinstance(response, dict) or not isinstance(response.get("id"), str):
            return
        try:
            await self.store.save(keep.team_id, response["id"], keep.previous_id, keep.input_items, response)
        except Exception:
            log.exception("keeping response %s failed", response["id"])


class _KeptStream:
    __slots__ = ("_chunks", "_gen", "_keep", "_owner")

    def __init__(self, owner: StoredResponses, chunks: Chunks, keep: ToKeep) -> None:
        self._owner = owner
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
        parser = SSEParser()
        kept = False
        async for chunk in self._chunks:
            if not kept:
                for sse in parser.feed(chunk):
                    response = _final_response(sse.event, sse.data)
                    if response is not None:
                        await self._owner._save(self._keep, response)
                        kept = True
            yield chunk


def _final_response(event: str | None, data: str) -> dict[str, Any] | None:
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


# ---------------------------------------------------------------- routes


def _not_found(response_id: str) -> NotFound:
    return NotFound(f"Response with id '{response_id}' not found.", param="response_id")


def _store(request: Request) -> ResponseStore:
    return get_services(request)[STORED_RESPONSES].store


@router.get("/v1/responses/{response_id}", summary="Get a stored response")
async def get_response(request: Request, response_id: str) -> Response:
    auth = await text_auth(request)
    headers = await enforce_query_limit(request, auth)
    stored = await _store(request).get(auth.team_id, response_id)
    if stored is None:
        raise _not_found(response_id)
    return JSONBytesResponse(stored.response, headers=headers)


@router.get("/v1/responses/{response_id}/input_items", summary="List a stored response's input items")
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
    listed = page(with_ids(stored.id, stored.input_items), limit=limit, after=after, order=order)
    return JSONBytesResponse(listed, headers=headers)


@router.delete("/v1/responses/{response_id}", summary="Delete a stored response")
async def delete_response(request: Request, response_id: str) -> Response:
    auth = await text_auth(request)
    headers = await enforce_query_limit(request, auth)
    if not await _store(request).delete(auth.team_id, response_id):
        raise _not_found(response_id)
    return JSONBytesResponse({"id": response_id, "object": "response.deleted", "deleted": True}, headers=headers)
