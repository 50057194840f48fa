"""The text request flow, top to bottom: auth → validate → model → limits/hold → own media → route → call →
respond → settle/log.

See DESIGN.md §3 and docs/architecture.md. Each step lives in its own module; this one only orders them,
cheapest refusals first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, TypeVar

import orjson
from starlette.requests import ClientDisconnect, Request

from modelport import tracing
from modelport.accounts.auth import AuthContext
from modelport.catalog import CatalogStore
from modelport.catalog_spec import TextModel
from modelport.clock import now_ms
from modelport.core.codec import BackgroundWire, ProtocolCodec
from modelport.core.json_depth import MAX_JSON_DEPTH, nests_deeper_than
from modelport.errors import InvalidParameters, NotFound, ServiceError
from modelport.gateway.answer import BodyAnswer, Chunks, StreamAnswer
from modelport.gateway.background_responses import BackgroundResponses
from modelport.gateway.cached import CachedAnswers
from modelport.gateway.call_metrics import record_call
from modelport.gateway.context import (
    CLIENT_GONE,
    Admission,
    Outcome,
    Refusal,
    Relayed,
    RequestContext,
    Timings,
)
from modelport.gateway.fallbacks import resolve_fallbacks
from modelport.gateway.headers import SVC_HEADERS, pick_headers, session_id, svc_user_id
from modelport.gateway.live_streams import LiveStreams
from modelport.gateway.metering import Metering
from modelport.gateway.models_route import team_may_use
from modelport.gateway.own_media import OwnMedia
from modelport.gateway.relay import StreamRelay, fast_body, translated_body
from modelport.gateway.stored_responses import StoredResponses
from modelport.gateway.upstream_call import OpenCall, UpstreamCaller
from modelport.money import micros_to_usd
from modelport.protocols import CODECS
from modelport.requestlog.record import RequestStatus
from modelport.responses_store.plan import ToKeep
from modelport.services import ServiceKey
from modelport.tracing import TRACEPARENT, TRACESTATE
from modelport.web.body import read_body
from modelport.web.deps import text_auth
from modelport.web.disconnect import DisconnectWatch

E = TypeVar("E", bound=ServiceError)

# Inline media may be 16 MB (about 21.4 MB as base64) and a conversation carries more than one part.
MAX_BODY_BYTES = 64 * 1024 * 1024
# Client headers some upstream protocol needs (each codec names its own), and the W3C trace context.
FORWARDED_HEADERS = tuple(
    dict.fromkeys([*(h for codec in CODECS.values() for h in codec.forwarded_headers), TRACEPARENT, TRACESTATE])
)
# Every request header the pipeline reads (a codec's own: `anthropic-beta`, in the forwarded ones).
READ_HEADERS = SVC_HEADERS | frozenset(h.encode("latin-1") for h in FORWARDED_HEADERS)
TEXT_GATEWAY: ServiceKey[TextGateway] = ServiceKey("text gateway")


class ClientGone(ClientDisconnect):
    """The client disconnected while a non-streaming call was running."""


async def read_json_body(request: Request) -> dict[str, Any]:
    return (await read_json_body_raw(request))[0]


async def read_json_body_raw(request: Request) -> tuple[dict[str, Any], bytes]:
    """The request's JSON object and the bytes it came as."""
    raw = await read_body(request, MAX_BODY_BYTES)  # counted as it arrives: a chunked body has no length
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidParameters(f"the request body is not valid JSON: {exc.msg}") from exc
    if not isinstance(body, dict):
        raise InvalidParameters("the request body must be a JSON object")
    if nests_deeper_than(raw, body):
        raise InvalidParameters(f"the request body nests JSON deeper than {MAX_JSON_DEPTH} levels")
    return body, raw


class TextGateway:
    def __init__(
        self,
        catalog: CatalogStore,
        caller: UpstreamCaller,
        metering: Metering,
        own_media: OwnMedia,
        responses: StoredResponses | None = None,
        cached: CachedAnswers | None = None,
        background: BackgroundResponses | None = None,
    ) -> None:
        self.catalog = catalog
        self.background = background  # `background: true` Responses (None: the field is ignored)
        self.cached = cached  # the response cache's hooks (teams whose cache is on)
        self.responses = responses
        self.own_media = own_media
        self.caller = caller
        self.metering = metering
        self.live_streams = LiveStreams()

    async def resolve_model(self, model_id: str, ctx_auth: Any) -> TextModel:
        if "/" not in model_id:
            raise NotFound(
                f"The model '{model_id}' does not exist: model ids are <provider>/<name>",
                code="model_not_found",
                param="model",
            )
        snapshot = await self.catalog.get()
        model = snapshot.text.get(model_id)
        if model is None or not team_may_use(model, ctx_auth):
            raise NotFound(
                f"The model '{model_id}' does not exist or is not available to this key",
                code="model_not_found",
                param="model",
            )
        return model

    async def handle(self, request: Request, codec: ProtocolCodec) -> BodyAnswer | StreamAnswer:
        timings = Timings(arrived=time.perf_counter())
        auth = await text_auth(request)
        started_ms = now_ms()
        try:
            body, raw = await read_json_body_raw(request)
        except ServiceError as exc:
            self.metering.refuse(Refusal(request.state.request_id, auth, codec.route.endpoint, None, started_ms, exc))
            raise
        return await self.handle_body(request, codec, auth, body, raw, started_ms=started_ms, timings=timings)

    async def handle_body(
        self,
        request: Request,
        codec: ProtocolCodec,
        auth: AuthContext,
        body: dict[str, Any],
        raw: bytes,
        *,
        started_ms: int | None = None,
        timings: Timings | None = None,
    ) -> BodyAnswer | StreamAnswer:
        """A request whose key and body are known (`handle`; a background response's run, which comes with
        its key's context)."""
        timings = timings or Timings(arrived=time.perf_counter())
        started_ms = now_ms() if started_ms is None else started_ms
        original = body
        try:
            keep = None
            background = self._background_wire(codec, body)
            if background is not None and codec.server_state is not None and not codec.server_state.keeps(body):
                raise background.unstored()
            if codec.server_state is not None and self.responses is not None:
                # Responses: `previous_response_id` resolved (its items before the input), `store` read.
                body, raw, keep = await self.responses.prepare(codec.server_state, auth.team_id, body, raw)
            ctx = await self._context(request, codec, auth, body, started_ms)
            ctx.raw_body = raw
            if keep is not None:
                ctx.keep = keep
                # Echoed in the response the gateway makes (`store`, `previous_response_id`, `conversation`),
                # never sent on.
                if keep.store:
                    ctx.canonical.extras["_stored"] = True
                if keep.previous_id is not None:
                    ctx.canonical.extras["_previous_response_id"] = keep.previous_id
                if keep.conversation_id is not None:
                    ctx.canonical.extras["_conversation_id"] = keep.conversation_id
        except ServiceError as exc:
            # Refused before routing (bad body or headers, unknown model): still one log row.
            self.metering.refuse(Refusal(request.state.request_id, auth, codec.route.endpoint, body, started_ms, exc))
            raise
        if background is not None and self.background is not None:
            # Checked like any request (body, chain, model, rate limits and balance: 429 or 402 now, as for a
            # request answered at once; its requests per minute are counted here; not the team's concurrency:
            # it waits in the queue); run later, by the task workers, whose admission checks the balance
            # again and holds what the run may cost.
            admission = await self.metering.admit(ctx, in_flight=False)
            ctx.admission = admission
            self.metering.void(ctx)
            rid = codec.response_id_prefix + ctx.request_id.removeprefix("req_")
            return await self.background.create(
                request_id=ctx.request_id,
                auth=auth,
                body=original,
                headers=pick_headers(request.scope["headers"], READ_HEADERS),
                queued=background.queued(rid, ctx.canonical.model, ctx.canonical),
                answer_headers=admission.headers,
            )
        return await self._run(request, ctx, timings)

    def _background_wire(self, codec: ProtocolCodec, body: dict[str, Any]) -> BackgroundWire | None:
        """The protocol's background wire when this request asks to run in the background."""
        state = codec.server_state
        wire = state.background if state is not None else None
        if wire is None or self.background is None or not wire.asks(body):
            return None
        return wire

    async def _context(
        self,
        request: Request,
        codec: ProtocolCodec,
        auth: AuthContext,
        body: dict[str, Any],
        started_ms: int,
    ) -> RequestContext:
        picked = pick_headers(request.scope["headers"], READ_HEADERS)
        user_id = svc_user_id(picked)
        session = session_id(picked)
        canonical = codec.decode_request(body, picked)
        model = await self.resolve_model(canonical.model, auth)
        ctx = RequestContext(
            request_id=request.state.request_id,
            endpoint=codec.route.endpoint,
            codec=codec,
            auth=auth,
            body=body,
            canonical=canonical,
            model=model,
            stream=bool(canonical.stream),
            session_id=session,
            svc_user_id=user_id,
            headers={h: picked[h] for h in FORWARDED_HEADERS if h in picked},
            started_ms=started_ms,
            trace=tracing.current(),
            background_run=request.scope.get("state", {}).get("background_run"),
        )
        if model.fallbacks or model.context_fallbacks:
            ctx.fallbacks, ctx.context_fallbacks = await resolve_fallbacks(self.catalog, model, auth)
        return ctx

    async def _run(self, request: Request, ctx: RequestContext, timings: Timings) -> BodyAnswer | StreamAnswer:
        if self.cached is not None and ctx.auth.cache != "off":
            hit = await self.cached.answer(request, ctx)  # a hit is admitted, answered and settled there
            if hit is not None:
                return hit
        # Cheap refusals first: limits and balance before reading any of our own media from storage.
        admission = await (self.metering.admit(ctx) if ctx.trace is None else _traced_admission(self.metering, ctx))
        ctx.admission = admission
        ctx.extra_response_headers.update(admission.headers)
        call: OpenCall | None = None  # the answered call, known even if the client leaves while it is read
        try:
            ctx.rewritten = await self.own_media.inline(ctx.canonical)
            # Until the upstream has answered (the whole body, when not streaming) a hang-up cancels the call.
            with DisconnectWatch(request.receive) as watch:
                try:
                    call = await self.caller.open(ctx, timings)
                    payload = None if ctx.stream else await _whole_body(call, timings)
                except asyncio.CancelledError:
                    if watch.gone:
                        raise ClientGone() from None
                    raise
        except ServiceError as exc:
            self._end(ctx, timings, call, _outcome(timings, call, RequestStatus.ERROR, exc.text_message, exc.status))()
            raise _answered_with(exc, ctx.extra_response_headers) from exc
        except BaseException:
            self._end(ctx, timings, call, _outcome(timings, call, RequestStatus.CANCELLED, CLIENT_GONE, 499))()
            raise
        response_id = ctx.codec.response_id_prefix + ctx.request_id.removeprefix("req_")
        if payload is None:
            self.live_streams.add(call.reply)
            relay = StreamRelay(ctx, call, timings, response_id)
            chunks: Chunks = relay if ctx.keep is None else self._keeping(ctx, ctx.keep, relay)
            answer = StreamAnswer(chunks, headers=ctx.extra_response_headers)
            # Settled once the stream's end is sent (`answer.run_after`), from what the relay learned.
            answer.after = partial(self._stream_ended, ctx, timings, call, relay)
            return answer
        try:
            content, relayed = (
                fast_body(ctx, call, payload) if call.fast else translated_body(ctx, call, payload, response_id)
            )
        except ServiceError as exc:
            refused = _answered_with(exc, ctx.extra_response_headers)
            self._end(ctx, timings, call, _outcome(timings, call, RequestStatus.ERROR, exc.text_message, exc.status))()
            raise refused from exc
        # Priced now (the answer carries its cost), settled and logged once the answer is sent.
        settle = self._end(ctx, timings, call, _outcome(timings, call, *_ending(relayed), relayed=relayed))
        if ctx.keep is not None:
            try:
                await self._keep_body(ctx, ctx.keep, content)
            except BaseException:  # cancelled while keeping it: the answer was made, so it is settled
                settle()
                raise
        body_answer = BodyAnswer(content, headers=ctx.extra_response_headers)
        body_answer.after = settle
        return body_answer

    def _keeping(self, ctx: RequestContext, keep: ToKeep, relay: StreamRelay) -> Chunks:
        """A stream to keep (Responses, `store`): its final response kept before its final event is sent."""
        state = ctx.codec.server_state
        if self.responses is None or state is None:
            return relay
        return self.responses.keeping(state, relay, keep)

    async def _keep_body(self, ctx: RequestContext, keep: ToKeep, content: bytes) -> None:
        """A whole answer to keep, kept before it is sent: the client's next turn finds it."""
        state = ctx.codec.server_state
        if self.responses is not None and state is not None:
            await self.responses.keep_body(state, keep, content)

    def _stream_ended(self, ctx: RequestContext, timings: Timings, call: OpenCall, relay: StreamRelay) -> None:
        """The end of a streamed request, once its relay has ended: its settlement and log row, at once."""
        self.live_streams.discard(call.reply)
        relayed = relay.result or Relayed(hung_up=True)  # set by the relay's end (`aclose` at the latest)
        self._end(ctx, timings, call, _outcome(timings, call, *_ending(relayed), relayed=relayed))()

    def _end(
        self, ctx: RequestContext, timings: Timings, call: OpenCall | None, outcome: Outcome
    ) -> Callable[[], None]:
        """The end of one request, however it ended (once): its latency metrics and its cost now, and the
        settlement and log row returned, for the caller to run at once (a failure) or after the answer's last
        byte (`answer.run_after`: off the client's wait). A traced request is settled at once, in its span."""
        record_call(ctx, outcome, timings)
        settle: Callable[[], None]
        if ctx.trace is None:
            usage, priced = self.metering.price(ctx, outcome)
            settle = partial(self.metering.settle, ctx, outcome, usage, priced)
            cost = priced.cost_micros
        else:
            cost = _traced_settlement(self.metering, ctx, call.span if call is not None else None, outcome)
            settle = _settled
        if ctx.background_run is not None:
            settle = partial(ctx.background_run.settle, settle, partial(self.metering.void, ctx))
        # Non-streaming answers are built after this runs, so they carry the cost; streams cannot.
        ctx.extra_response_headers["X-Modelport-Cost"] = str(micros_to_usd(cost))
        if ctx.cache is not None and self.cached is not None:
            self.cached.keep(ctx, outcome, cost)  # stored only when it ended well
        return settle


async def _whole_body(call: OpenCall, timings: Timings) -> bytes:
    """A non-streaming call's whole body (the reply released however the read ends)."""
    try:
        payload = await call.reply.read_all()
    finally:
        await call.reply.release()
    timings.upstream_done = time.perf_counter()
    return payload


def _outcome(
    timings: Timings,
    call: OpenCall | None,
    status: RequestStatus,
    error: str | None = None,
    http_status: int = 200,
    relayed: Relayed | None = None,
) -> Outcome:
    """How the request ended, with what the answered call adds (its deployment, its path)."""
    return Outcome(
        status=status,
        http_status=http_status,
        error=error,
        usage=relayed.usage if relayed is not None else None,
        produced_chars=relayed.produced_chars if relayed is not None else 0,
        relayed_events=relayed.relayed_events if relayed is not None else 0,
        result=relayed.result if relayed is not None else None,
        deployment=call.candidate.key if call is not None else None,
        deployment_kind=call.candidate.deployment.kind if call is not None else None,
        fast=call.fast if call is not None else True,
        upstream_called=timings.first_attempt > 0,
        served=call.served if call is not None else None,
    )


def _answered_with(error: E, headers: Mapping[str, str]) -> E:
    """A new error like `error` whose answer also carries `headers` (the request's rate-limit and cost
    headers; the error's own win): raised in its place, so no exception is changed once raised."""
    copy = type(error).__new__(type(error), *error.args)
    copy.__dict__.update(error.__dict__)
    copy.headers = {**headers, **error.headers}
    return copy


def _settled() -> None:
    """The settlement of a request settled already (traced: inside its span)."""


def _ending(relayed: Relayed) -> tuple[RequestStatus, str | None]:
    """How an answered request ended, from what its relay learned: an error event or a cut stream fails it
    (the status stays the committed 200), a hang-up cancels it."""
    if relayed.error is not None:
        return RequestStatus.ERROR, relayed.error
    if relayed.hung_up:
        return RequestStatus.CANCELLED, CLIENT_GONE
    return RequestStatus.SUCCESS, None


async def _traced_admission(metering: Metering, ctx: RequestContext) -> Admission:
    span = tracing.start("admission", {"modelport.model": ctx.model.id}, parent=ctx.trace)
    try:
        admission = await metering.admit(ctx)
    except ServiceError as exc:
        tracing.end(span, {"http.response.status_code": exc.status}, error=exc.text_message)
        raise
    tracing.end(span, {"modelport.held_usd": admission.held_micros / 1_000_000})
    return admission


def _traced_settlement(metering: Metering, ctx: RequestContext, upstream_span: Any, outcome: Outcome) -> int:
    """The end of the upstream span (the answer is over), then settlement: cost, charge, log row (queued)."""
    usage = outcome.usage
    tracing.end(
        upstream_span,
        {
            "gen_ai.usage.input_tokens": usage.input_tokens if usage is not None else 0,
            "gen_ai.usage.output_tokens": usage.output_tokens if usage is not None else 0,
            "modelport.outcome": outcome.status,
        },
        error=outcome.error if outcome.status == RequestStatus.ERROR else None,
    )
    span = tracing.start("settlement", parent=ctx.trace)
    cost = metering.finish(ctx, outcome)
    tracing.end(span, {"modelport.cost_usd": float(micros_to_usd(cost)), "modelport.outcome": outcome.status})
    return cost
