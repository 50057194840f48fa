"""The text request flow, top to bottom: auth → validate → limits/hold → route → call → respond → settle/log.

See DESIGN.md §3. Each step lives in its own module; this one only orders them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

import orjson
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse

from modelport.accounts.auth import AuthContext
from modelport.apps.deps import text_auth
from modelport.apps.envelope import JSONBytesResponse
from modelport.catalog_spec import TextModel
from modelport.clock import now_ms
from modelport.errors import InvalidParameters, NotFound, PayloadTooLarge, ServiceError
from modelport.gateway.accounting import Accounting
from modelport.gateway.context import Outcome, RequestContext
from modelport.gateway.headers import session_id, svc_user_id
from modelport.gateway.models_route import team_may_use
from modelport.gateway.own_media import inline_own_files
from modelport.gateway.relay import fast_body, fast_stream, translated_body, translated_stream
from modelport.gateway.upstream_call import UpstreamCaller
from modelport.protocols import get_codec
from modelport.runtime import Runtime

T = TypeVar("T")

# Inline media may be 16 MB (about 21.4 MB as base64) and a conversation carries more than one part.
MAX_BODY_BYTES = 64 * 1024 * 1024
FORWARDED_HEADERS = ("anthropic-version", "anthropic-beta")
RESPONSE_ID_PREFIX = {"openai_chat": "chatcmpl-", "openai_responses": "resp_", "anthropic_messages": "msg_"}
SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


class ClientGone(ClientDisconnect):
    """The client disconnected while a non-streaming call was running."""


async def read_json_body(request: Request) -> dict[str, Any]:
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > MAX_BODY_BYTES:
        raise PayloadTooLarge(f"request body over {MAX_BODY_BYTES // (1024 * 1024)} MB")
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise PayloadTooLarge(f"request body over {MAX_BODY_BYTES // (1024 * 1024)} MB")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidParameters(f"the request body is not valid JSON: {exc.msg}") from exc
    if not isinstance(body, dict):
        raise InvalidParameters("the request body must be a JSON object")
    return body


class TextGateway:
    def __init__(self, runtime: Runtime, caller: UpstreamCaller, accounting: Accounting) -> None:
        self.runtime = runtime
        self.caller = caller
        self.accounting = accounting

    async def resolve_model(self, model_id: str, ctx_auth: Any) -> TextModel:
        if "/" not in model_id:
            raise NotFound(
                f"The model '{model_id}' does not exist: model ids are <provider>/<name>",
                code="model_not_found",
                param="model",
            )
        snapshot = await self.runtime.catalog.get()
        model = snapshot.text.get(model_id)
        if model is None or not team_may_use(model, ctx_auth):
            raise NotFound(
                f"The model '{model_id}' does not exist or is not available to this key",
                code="model_not_found",
                param="model",
            )
        return model

    async def handle(self, request: Request, endpoint: str, protocol: str) -> Response:
        auth = await text_auth(request)
        started_ms = now_ms()
        body: dict[str, Any] | None = None
        try:
            body = await read_json_body(request)
            ctx = await self._context(request, endpoint, protocol, auth, body, started_ms)
        except ServiceError as exc:
            # Refused before routing (bad body or headers, unknown model): still one log row.
            self.accounting.refuse(request.state.request_id, auth, endpoint, body, started_ms, exc)
            raise
        return await self._run(request, ctx)

    async def _context(
        self, request: Request, endpoint: str, protocol: str, auth: AuthContext, body: dict[str, Any], started_ms: int
    ) -> RequestContext:
        user_id = svc_user_id(request.headers)
        session = session_id(request.headers)
        codec = get_codec(protocol)
        canonical = codec.decode_request(body)
        model = await self.resolve_model(canonical.model, auth)
        rewritten = await inline_own_files(self.runtime, canonical)
        return RequestContext(
            request_id=request.state.request_id,
            endpoint=endpoint,
            protocol=protocol,
            codec=codec,
            auth=auth,
            body=body,
            canonical=canonical,
            model=model,
            stream=bool(canonical.stream),
            session_id=session,
            svc_user_id=user_id,
            headers={h: request.headers[h] for h in FORWARDED_HEADERS if h in request.headers},
            started_ms=started_ms,
            rewritten=rewritten,
        )

    async def _run(self, request: Request, ctx: RequestContext) -> Response:
        await self.accounting.admit(ctx)
        try:
            # Until the upstream answers (the whole body, when not streaming) a hang-up cancels the call.
            call = await _until_disconnect(request, self.caller.open(ctx))
        except ServiceError as exc:
            self.accounting.finish(ctx, Outcome("error", exc.status, error=exc.text_message))
            exc.headers = {**ctx.extra_response_headers, **exc.headers}
            raise
        except BaseException:
            self.accounting.finish(ctx, Outcome("cancelled", 499, error="client disconnected"))
            raise
        response_id = RESPONSE_ID_PREFIX[ctx.protocol] + ctx.request_id.removeprefix("req_")
        outcome = Outcome("success", 200, deployment=call.candidate.key)
        if ctx.stream:
            finished = False

            def finish() -> None:
                nonlocal finished
                if not finished:
                    finished = True
                    self.accounting.finish(ctx, outcome)

            stream = (
                fast_stream(ctx, call, outcome, finish)
                if call.fast
                else translated_stream(ctx, call, response_id, outcome, finish)
            )
            return StreamingResponse(
                stream, media_type="text/event-stream", headers={**SSE_HEADERS, **ctx.extra_response_headers}
            )
        try:
            payload = await _until_disconnect(request, call.reply.read_all())
            content = (
                fast_body(ctx, call, payload, outcome)
                if call.fast
                else translated_body(ctx, call, payload, response_id, outcome)
            )
        except ClientGone:
            outcome.status, outcome.http_status, outcome.error = "cancelled", 499, "client disconnected"
            raise
        except ServiceError as exc:
            outcome.status, outcome.http_status, outcome.error = "error", exc.status, exc.text_message
            exc.headers = {**ctx.extra_response_headers, **exc.headers}
            raise
        finally:
            await call.reply.release()
            self.accounting.finish(ctx, outcome)
        return Response(content, media_type="application/json", headers=ctx.extra_response_headers)


async def _until_disconnect(request: Request, work: Awaitable[T]) -> T:
    """Await `work`, cancelling it if the client disconnects first (the body has been read already).

    One watcher task per request: it cancels this task when `http.disconnect` arrives."""
    this = asyncio.current_task()
    assert this is not None
    gone = False

    async def watch() -> None:
        nonlocal gone
        await _wait_disconnect(request)
        gone = True
        this.cancel()

    watcher = asyncio.get_running_loop().create_task(watch())
    try:
        return await work
    except asyncio.CancelledError:
        if gone:
            raise ClientGone() from None
        raise
    finally:
        watcher.cancel()


async def _wait_disconnect(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


def error_response(exc: ServiceError) -> Response:
    return JSONBytesResponse(exc.text_body(), status_code=exc.status, headers=exc.headers or None)
