"""Background Responses on the text gateway (issue 43 item 5, docs/api/stored-responses.md).

A `POST /v1/responses` with `background` true is checked like any request (body, `previous_response_id`,
model) and answered at once with its response object, status `queued`; its row
(`responses_store.background`) is queued on the task queue (`queue.JobKind.BACKGROUND_RESPONSE`), so it
outlives this process: the task workers of any `serve` or `worker` process run it, and their reconciler
queues it again when the queue lost it or the process running it died (its lease ran out).

A run goes through the gateway's own pipeline as a streamed request (`TextGateway.handle_body`), as the
key that made it, with the request id given at creation: whatever attempt finishes, the request has one id
and one settlement. The response is charged once, for the attempt that completed: one cut by its process's
end (killed, or stopped by a shutdown, even while its upstream request is still opening) is released
unbilled and queued again, and the next attempt starts again from the beginning; one that lost its lease
(stalled past it, taken over by another) writes nothing and is unbilled (every end is a swap on the
response's id and attempt). Its events are kept as they arrive, numbered in the response's own sequence,
which goes on across attempts (a new attempt's events are numbered above every earlier one's), for clients
that stream it; its final response is stored like any stored response, so retrieval, input items and
`previous_response_id` find it.

`POST /v1/responses/{id}/cancel` cancels a queued response (nothing ran: nothing is billed) or a running
one (its run notices within `responses.background_poll_seconds`, stops the stream and bills what ran).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any

import orjson
from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.auth import AuthContext
from modelport.core.codec import BackgroundWire, ProtocolCodec, ServerState
from modelport.core.sse import SSEParser, sse_frame
from modelport.errors import NotFound, ServiceError
from modelport.gateway.answer import BodyAnswer, StreamAnswer, run_after
from modelport.gateway.context import BackgroundRun
from modelport.protocols import CODECS
from modelport.queue import JobKind, TaskQueue
from modelport.responses_store.background import EVENTS_PAGE, BackgroundStore, Claimed, Event
from modelport.responses_store.store import ResponseStore
from modelport.services import ServiceKey
from modelport.web.deps import get_services, text_auth
from modelport.web.envelope import JSONBytesResponse
from modelport.web.query_limit import enforce_query_limit

log = logging.getLogger("modelport.responses")

router = APIRouter(tags=["text"])
# (a request made for the run, the codec, the key's context, the body, its bytes) -> the pipeline's answer.
RunRequest = Callable[
    [Request, ProtocolCodec, AuthContext, dict[str, Any], bytes], Awaitable[BodyAnswer | StreamAnswer]
]
KeyContext = Callable[[str], Awaitable[AuthContext | None]]


def _background_codec() -> tuple[ProtocolCodec, ServerState, BackgroundWire]:
    ((codec, state, wire),) = (
        (c, c.server_state, c.server_state.background)
        for c in CODECS.values()
        if c.server_state is not None and c.server_state.background is not None
    )
    return codec, state, wire


CODEC, STATE, WIRE = _background_codec()
BACKGROUND_RESPONSES: ServiceKey[BackgroundResponses] = ServiceKey("background responses")


class _Stopped(Exception):
    """This process is going down (or no longer holds the response): the attempt ends without settling."""


class BackgroundResponses:
    def __init__(
        self,
        store: BackgroundStore,
        responses: ResponseStore,
        queue: TaskQueue,
        key_context: KeyContext,
        *,
        poll_seconds: float,
        lease_seconds: float,
        max_attempts: int,
        draining: Callable[[], bool] = lambda: False,
    ) -> None:
        self.store = store
        self.responses = responses
        self._queue = queue
        self._key_context = key_context
        self.poll_seconds = poll_seconds
        self._lease_ms = int(lease_seconds * 1000)
        self._max_attempts = max_attempts
        self._draining = draining
        self._run_request: RunRequest | None = None
        self._stopping = False
        self._running: dict[asyncio.Task[None], BackgroundRun] = {}

    def bind(self, run_request: RunRequest) -> None:
        """The gateway's pipeline the runs go through (it is made after this)."""
        self._run_request = run_request

    # ------------------------------------------------------------ creation

    async def create(
        self,
        *,
        request_id: str,
        auth: AuthContext,
        body: dict[str, Any],
        headers: dict[str, str],
        queued: dict[str, Any],
        answer_headers: Mapping[str, str] | None = None,
    ) -> BodyAnswer | StreamAnswer:
        """Keep the request, queue its run and answer with its queued response object (a stream of its
        events when the request streams)."""
        rid = str(queued["id"])
        await self.store.create(
            response_id=rid,
            team_id=auth.team_id,
            key_id=auth.key_id,
            request_id=request_id,
            body=body,
            headers=headers,
            response=queued,
        )
        await self._queue.enqueue([rid], JobKind.BACKGROUND_RESPONSE)
        if body.get("stream") is True:
            return StreamAnswer(self.events(rid, -1), headers=answer_headers)
        return BodyAnswer(orjson.dumps(queued), headers=answer_headers)

    # ------------------------------------------------------------ the stream of one response

    async def events(self, rid: str, after: int) -> AsyncGenerator[bytes, None]:
        """The response's events numbered above `after` as SSE, then the new ones as its run makes them,
        until it has finished and every event is sent."""
        while True:
            batch = await self.store.events_after(rid, after)
            for event in batch:
                yield sse_frame(event.event, event.data)
                after = event.sequence_number
            if len(batch) == EVENTS_PAGE:
                continue
            if not batch:
                status = await self.store.status(rid)
                if status is None or status in WIRE.finished:
                    # A run keeps its last events before it writes its end: one more read has them all.
                    rest = await self.store.events_after(rid, after)
                    for event in rest:
                        yield sse_frame(event.event, event.data)
                    if len(rest) < EVENTS_PAGE:
                        return
                    after = rest[-1].sequence_number
                    continue
            await asyncio.sleep(self.poll_seconds)

    # ------------------------------------------------------------ runs

    async def run(self, response_id: str) -> None:
        """The task queue's handler: run the response once more, if it needs a run."""
        if self._stopping or self._draining():
            return
        claimed = await self.store.claim(
            response_id, lease_ms=self._lease_ms, max_attempts=self._max_attempts, gave_up=WIRE.interrupted()
        )
        if claimed is None:
            return
        state = BackgroundRun()
        attempt = asyncio.create_task(self._attempt(claimed, state))
        self._running[attempt] = state
        try:
            while not attempt.done():
                await asyncio.wait({attempt}, timeout=self.poll_seconds)
                if attempt.done() or state.ending or await self.store.renew(claimed, self._lease_ms):
                    continue
                # Cancelled by the client (billed for what ran), or taken over by another attempt (unbilled).
                state.unbilled = not await self.store.cancelled_during(claimed)
                attempt.cancel()
                break
            with contextlib.suppress(asyncio.CancelledError):
                await attempt
        finally:
            self._running.pop(attempt, None)
            if not attempt.done():  # this handler was cancelled (its process stops): the attempt is cut
                if not state.ending:
                    state.unbilled = True
                attempt.cancel()

    async def _attempt(self, claimed: Claimed, state: BackgroundRun) -> None:
        assert self._run_request is not None, "bind() the gateway first"
        try:
            auth = await self._key_context(claimed.key_id)
            if auth is None or auth.team_id != claimed.team_id:
                error = {
                    "code": "invalid_api_key",
                    "message": "The API key that made this response is no longer valid.",
                }
                await self._fail(claimed, state, claimed.first_sequence, error)
                return
            body = WIRE.run_body(claimed.body)
            try:
                answer = await self._run_request(_run_scope(claimed, state), CODEC, auth, body, orjson.dumps(body))
            except ServiceError as exc:  # refused (402, 429) or failed before a stream: settled by the pipeline
                await self._fail(claimed, state, claimed.first_sequence, WIRE.error_of(exc))
                return
        except asyncio.CancelledError:
            if self._stopping or self._draining():  # cut while opening: unbilled, queued again
                state.unbilled = True
                await self._release(claimed)
            raise
        if isinstance(answer, BodyAnswer):  # not a stream (a cache hit may be one): the whole response
            try:
                response = orjson.loads(answer.body)
                shown = WIRE.event({"response": response}, claimed.id, claimed.first_sequence)["response"]
                await self._end(claimed, state, shown, "completed")
            finally:
                run_after(answer)
            return
        await self._follow(claimed, state, answer)

    async def _follow(self, claimed: Claimed, state: BackgroundRun, answer: StreamAnswer) -> None:
        """Keep the stream's events as they come; at its end, its final response. Settled (`run_after`),
        unbilled when the attempt was cut by this process's end or no longer holds the response."""
        parser = SSEParser()
        sequence = claimed.first_sequence
        pending: list[Event] = []
        flushed = time.monotonic()
        ending: tuple[str, dict[str, Any]] | None = None
        error: dict[str, Any] | None = None
        try:
            async for chunk in answer.chunks:
                for sse in parser.feed(chunk):
                    try:
                        data = orjson.loads(sse.data)
                    except orjson.JSONDecodeError:
                        continue
                    if not isinstance(data, dict):
                        continue
                    shown = WIRE.event(data, claimed.id, sequence)
                    pending.append(Event(sequence, sse.event, orjson.dumps(shown).decode()))
                    sequence += 1
                    ending = WIRE.final(sse.event, shown) or ending
                    error = WIRE.error_in(sse.event, data) or error
                if pending and (ending is not None or time.monotonic() - flushed >= self.poll_seconds):
                    if not await self.store.add_events(claimed, pending):
                        await self._lost(claimed, state)
                        return  # the stream is closed below
                    pending, flushed = [], time.monotonic()
            if ending is None and (self._stopping or self._draining()):
                raise _Stopped()  # cut by the shutdown (`live_streams.cut_all`): the next attempt runs it
            if not await self.store.add_events(claimed, pending):
                await self._lost(claimed, state)
                return
            if ending is None:
                await self._fail(claimed, state, sequence, error or WIRE.interrupted())
            else:
                status, response = ending
                await self._end(claimed, state, response, status)
        except (_Stopped, asyncio.CancelledError):
            if self._stopping or self._draining():
                state.unbilled = True
                await self._release(claimed)
            raise
        finally:
            try:
                await answer.chunks.aclose()
            finally:
                run_after(answer)

    async def _lost(self, claimed: Claimed, state: BackgroundRun) -> None:
        """The attempt no longer holds the response: cancelled by the client (billed for what ran), or taken
        over by another attempt, which is the one billed (this one is unbilled)."""
        state.unbilled = not await self.store.cancelled_during(claimed)

    async def _end(self, claimed: Claimed, state: BackgroundRun, response: dict[str, Any], status: str) -> None:
        """A run's final response: stored (retrieval, input items, chains) and written to its row, if this
        attempt still holds the response (a swap on its id and attempt); else nothing is written and the
        attempt is unbilled (unless the response was cancelled)."""
        state.ending = True
        if not await self.store.renew(claimed, self._lease_ms):
            await self._lost(claimed, state)
            return
        if status in ("completed", "incomplete"):
            try:
                await self.responses.save(
                    claimed.team_id,
                    claimed.id,
                    STATE.previous_id(claimed.body),
                    STATE.input_items(claimed.body),
                    response,
                )
            except Exception:
                log.exception("storing background response %s failed", claimed.id)
        if not await self.store.finish(claimed, status, response):
            await self._lost(claimed, state)

    async def _fail(self, claimed: Claimed, state: BackgroundRun, sequence: int, error: dict[str, Any]) -> None:
        """A run that ended without a final response: a `response.failed` event for its streams, then
        its row (neither when the attempt no longer holds the response)."""
        state.ending = True
        name, event = WIRE.failed_event(WIRE.with_status(claimed.response, "failed", error), claimed.id, sequence)
        if not await self.store.add_events(claimed, [Event(sequence, name, orjson.dumps(event).decode())]):
            await self._lost(claimed, state)
            return
        if not await self.store.finish(claimed, "failed", event["response"]):
            await self._lost(claimed, state)

    async def _release(self, claimed: Claimed) -> None:
        with contextlib.suppress(Exception):
            await self.store.release(claimed)

    async def aclose(self) -> None:
        """This process stops: its runs end without settling and go back to the queue for another."""
        self._stopping = True
        running = list(self._running.items())
        for task, state in running:
            if not state.ending:  # one writing its end finishes (and is billed); the others are cut, unbilled
                state.unbilled = True
                task.cancel()
        if running:
            await asyncio.gather(*(task for task, _ in running), return_exceptions=True)


def _run_scope(claimed: Claimed, state: BackgroundRun) -> Request:
    """The request a run goes through the pipeline as: the id given at creation, the headers the gateway
    reads (no credential: the key's context is given), a client that never hangs up, and the attempt's
    `BackgroundRun` (how the pipeline settles it)."""
    never = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await never.wait()
        return {"type": "http.disconnect"}

    scope = {
        "type": "http",
        "method": "POST",
        "path": CODEC.route.path,
        "query_string": b"",
        "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in claimed.headers.items()],
        "client": None,
        "state": {"request_id": claimed.request_id, "background_run": state},
    }
    return Request(scope, receive)


# ---------------------------------------------------------------- routes

_PATH = CODEC.route.path + "/{response_id}"


def _service(request: Request) -> BackgroundResponses:
    return get_services(request)[BACKGROUND_RESPONSES]


async def answer_get(
    request: Request, auth: AuthContext, response_id: str, *, stream: bool, starting_after: int | None
) -> Response | None:
    """`GET /v1/responses/{id}` of a background response: its latest object, or (`stream`) its events
    after `starting_after`. None: no background response of the team has this id."""
    service = _service(request)
    found = await service.store.get(auth.team_id, response_id)
    if found is None:
        return None
    if stream:
        return StreamAnswer(service.events(found.id, -1 if starting_after is None else starting_after))
    return JSONBytesResponse(found.response)


@router.post(_PATH + "/cancel", summary="Cancel a background response")
async def cancel_response(request: Request, response_id: str) -> Response:
    auth = await text_auth(request)
    headers = await enforce_query_limit(request, auth)
    service = _service(request)
    found = await service.store.cancel(auth.team_id, response_id, lambda r: WIRE.with_status(r, "cancelled"))
    if found is None:
        if await service.responses.get(auth.team_id, response_id) is not None:
            raise WIRE.not_background()
        raise NotFound(f"Response with id '{response_id}' not found.", param="response_id")
    if found.status != "cancelled":
        raise WIRE.finished_already(found.status)
    return JSONBytesResponse(found.response, headers=headers)
