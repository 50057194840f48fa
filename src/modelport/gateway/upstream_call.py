"""Opening the upstream call of a text request: the request's `Attempt` (`attempts.py`, the one attempt
loop) builds the body for each deployment in turn; the loop falls back on failure.

Fallback happens only before the client has seen a byte: once a deployment's 200 has shown its first
content (`first_byte.py`) the answer is committed. Same-protocol deployments take the fast path (the
client's body with only `model` changed); others get the request translated from the canonical form.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass
from typing import Any, TypeVar

from modelport import tracing
from modelport.catalog_spec import Deployment, TextModel
from modelport.core.codec import ProtocolCodec
from modelport.errors import ModelUnavailable
from modelport.gateway.attempts import Attempt, attempt_each
from modelport.gateway.context import RequestContext, Timings
from modelport.gateway.fallbacks import request_plan
from modelport.gateway.first_byte import NotAnswered, judge_body, judge_stream
from modelport.gateway.model_name import splice_request_model
from modelport.gateway.routing import Candidate, DeploymentRouter
from modelport.gateway.upstream_errors import exhausted_error
from modelport.metrics import (
    FALLBACKS,
    UPSTREAM_ATTEMPTS,
    UPSTREAM_DURATION,
    UPSTREAM_ERRORS,
    UPSTREAM_REQUESTS,
    UPSTREAM_TTFB,
    deployment_label,
    provider_of,
)
from modelport.metrics import enabled as metrics_enabled
from modelport.upstreams.kinds import auth_headers, codec_of, deployment_max_output, spec_of
from modelport.upstreams.pool import UpstreamPool
from modelport.upstreams.transport import UpstreamReply, UpstreamUnreachable

T = TypeVar("T")


@dataclass(slots=True)
class OpenCall:
    """What the caller learned: the deployment that answered 200, on which path, and its reply."""

    candidate: Candidate
    fast: bool
    upstream_codec: ProtocolCodec
    reply: UpstreamReply
    # The client asked for no usage chunk but we asked the upstream for one (Chat streams): drop it.
    strip_usage_chunk: bool
    # The answered attempt's tracing span (None when tracing is off), ended with the answer by the pipeline.
    span: Any = None
    # A whole body, parsed while judging it (`first_byte.judge_body`); None for a stream.
    parsed: dict[str, Any] | None = None
    # The fallback model that answered (None: the requested one did).
    served: TextModel | None = None


_OFF = ("", "", "")  # the labels while metrics and tracing are off (every metric's `labels` then records nothing)


def _error_kind(status: int) -> str:
    return "rate_limited" if status == 429 else "server_error" if status >= 500 else "client_error"


def _upstream_span(ctx: RequestContext, labels: tuple[str, str, str], fast: bool) -> Any:
    provider, model, deployment = labels
    return tracing.start(
        "upstream",
        {
            "gen_ai.system": provider,
            "gen_ai.request.model": model,
            "modelport.deployment": deployment,
            "modelport.path": "fast" if fast else "translated",
            "modelport.stream": ctx.stream,
        },
        parent=ctx.trace,
        kind="CLIENT",
    )


class UpstreamCaller:
    def __init__(self, pool: UpstreamPool, router: DeploymentRouter) -> None:
        self.pool = pool
        self.router = router

    async def open(self, ctx: RequestContext, timings: Timings) -> OpenCall:
        """The first deployment to answer 200. Times go to `timings` as they happen (an attempt made counts
        even when the client hangs up before an answer: `timings.first_attempt`)."""
        candidates = request_plan(self.router, ctx)
        return await attempt_each(self.router, self.pool, candidates, _Opening(ctx, timings))

    async def attempt(self, model: TextModel, session_id: str | None, attempt: Attempt[T]) -> T:
        """`attempt` over the model's deployments in routing order (`attempts.attempt_each`)."""
        return await attempt_each(self.router, self.pool, self.router.plan(model, session_id), attempt)


class _Opening(Attempt[OpenCall]):
    """The attempt of a text request: the deployment's body and headers (fast path or translated), metrics
    and an upstream span per attempt, times in the request's `Timings`; failures count in health."""

    __slots__ = (
        "_codec",
        "_ctx",
        "_deadline",
        "_fast",
        "_labelled",
        "_labels",
        "_metered",
        "_sent",
        "_span",
        "_strip",
        "_timings",
    )
    counts_in_health = True

    def __init__(self, ctx: RequestContext, timings: Timings) -> None:
        self._ctx = ctx
        self._timings = timings
        self._metered = metrics_enabled()
        self._labelled = self._metered or ctx.trace is not None  # the upstream span carries the same labels
        # The attempt in flight (one at a time).
        self._codec: ProtocolCodec = ctx.codec
        self._fast = False
        self._strip = False
        self._labels = _OFF
        self._span: Any = None
        self._sent = 0.0
        self._deadline: float | None = None  # loop time of the attempt's first-byte timeout (None: none)

    def codec(self, candidate: Candidate) -> ProtocolCodec:
        return self._codec

    async def send(self, pool: UpstreamPool, candidate: Candidate) -> UpstreamReply:
        ctx, timings = self._ctx, self._timings
        deployment = candidate.deployment
        codec = self._codec = codec_of(deployment)
        fast = self._fast = codec is ctx.codec and not ctx.rewritten
        model = candidate.model or ctx.model
        body, self._strip, raw = _body(ctx, model, deployment, codec, fast)
        headers = _headers(ctx, deployment, codec, pool)
        # Labels only for metrics or tracing (both off unless configured).
        labels = self._labels = (
            (provider_of(model.id), model.id, deployment_label(candidate.key)) if self._labelled else _OFF
        )
        span = self._span = None if ctx.trace is None else _upstream_span(ctx, labels, fast)
        tracing.inject(span, headers, ctx.headers)  # our span's trace context, or the client's as it came
        sent = self._sent = time.perf_counter()
        timings.first_attempt = timings.first_attempt or sent
        transport = pool.transport(deployment)
        first_byte = deployment.first_byte_timeout_seconds
        if first_byte is None:
            self._deadline = None
            reply = await transport.send(body, headers, stream=ctx.stream, raw=raw)
        else:
            deadline = self._deadline = asyncio.get_running_loop().time() + first_byte
            try:
                async with asyncio.timeout_at(deadline):
                    reply = await transport.send(body, headers, stream=ctx.stream, raw=raw)
            except TimeoutError:
                raise UpstreamUnreachable(f"no answer within the first-byte timeout ({first_byte:g} s)") from None
        if self._metered:
            UPSTREAM_TTFB.labels(*labels).observe(time.perf_counter() - sent)
            UPSTREAM_REQUESTS.labels(*labels, str(reply.status)).inc()
        return reply

    def unreachable(self, candidate: Candidate) -> None:
        UPSTREAM_REQUESTS.labels(*self._labels, "0").inc()
        UPSTREAM_ERRORS.labels(*self._labels, "unreachable").inc()
        self._timings.upstream_waited += time.perf_counter() - self._sent
        tracing.end(self._span, error="unreachable")

    async def answered(self, candidate: Candidate, reply: UpstreamReply) -> OpenCall:
        parsed = None
        if reply.chunks is not None:
            await judge_stream(reply, self._codec, self._deadline)
        else:
            parsed = judge_body(reply, self._codec)
        self._timings.upstream_sent = self._sent
        served = candidate.model if candidate.model is not None and candidate.model is not self._ctx.model else None
        if served is not None and self._metered:
            FALLBACKS.labels(self._ctx.model.id, served.id).inc()
        return OpenCall(candidate, self._fast, self._codec, reply, self._strip, self._span, parsed, served)

    def tried(self, calls: int) -> None:
        if self._metered and calls:
            model = self._ctx.model.id
            UPSTREAM_ATTEMPTS.labels(provider_of(model), model).observe(calls)

    def broke(self, candidate: Candidate, error: NotAnswered) -> None:
        UPSTREAM_ERRORS.labels(*self._labels, "broken_answer").inc()
        self._timings.upstream_waited += time.perf_counter() - self._sent
        tracing.end(self._span, error=error.message)

    async def refused(self, candidate: Candidate, reply: UpstreamReply) -> bytes:
        labels = self._labels
        UPSTREAM_ERRORS.labels(*labels, _error_kind(reply.status)).inc()
        tracing.end(self._span, {"http.response.status_code": reply.status}, error=f"HTTP {reply.status}")
        payload = await reply.read_all()
        await reply.release()
        waited = time.perf_counter() - self._sent
        self._timings.upstream_waited += waited
        UPSTREAM_DURATION.labels(*labels).observe(waited)
        return payload

    def unavailable(self, candidates: list[Candidate], router: DeploymentRouter) -> OpenCall:
        raise ModelUnavailable(
            "the model is temporarily unavailable; retry later or switch model",
            headers={"Retry-After": str(router.retry_after(candidates))},
        )

    def exhausted(self, last_status: int | None, candidates: list[Candidate], router: DeploymentRouter) -> OpenCall:
        raise exhausted_error(last_status, router.retry_after(candidates))


def _body(
    ctx: RequestContext, model: TextModel, deployment: Deployment, codec: ProtocolCodec, fast: bool
) -> tuple[dict[str, Any], bool, bytes | None]:
    """The upstream body, whether the relay must drop an unasked usage chunk, and the exact bytes to send
    when the body is the client's own but for `model` (None: serialise the body)."""
    cap = ctx.admission.output_cap  # set only when the team's credit cannot cover the model's maximum output
    if fast:
        body = dict(ctx.body)
        body["model"] = deployment.model
        if cap is not None:
            _cap_fast_body(body, cap, codec.output_cap_fields, spec_of(deployment).output_cap_field)
    else:
        canonical = ctx.canonical
        if cap is not None:
            canonical = dataclasses.replace(canonical, max_output_tokens=min(cap, canonical.max_output_tokens or cap))
        elif canonical.max_output_tokens is None and codec.requires_output_cap:
            # The upstream protocol needs a cap the client did not give: the model's maximum output.
            canonical = dataclasses.replace(canonical, max_output_tokens=deployment_max_output(model, deployment))
        body = codec.encode_request(canonical, deployment.model)
        body["stream"] = ctx.stream
    strip_usage = codec.prepare_upstream_body(body, stream=ctx.stream, fast=fast)
    raw = _client_bytes(ctx, body) if fast else None
    return body, strip_usage, raw


def _headers(ctx: RequestContext, deployment: Deployment, codec: ProtocolCodec, pool: UpstreamPool) -> dict[str, str]:
    headers = {**deployment.headers, **auth_headers(deployment, pool.api_key(deployment))}
    headers.update(codec.upstream_headers(ctx.headers))
    if ctx.stream:
        headers["accept"] = "text/event-stream"
    return headers


def _cap_fast_body(body: dict[str, Any], cap: int, cap_fields: tuple[str, ...], kind_field: str) -> None:
    """Lower the client's own cap fields to `cap`, or add the upstream kind's field when it set none."""
    own = [name for name in cap_fields if isinstance(body.get(name), int)]
    for name in own:
        body[name] = min(body[name], cap)
    if not own:
        body[kind_field] = cap


def _client_bytes(ctx: RequestContext, body: dict[str, Any]) -> bytes | None:
    """The client's request bytes with only `model` spliced in, when the body going upstream is exactly the
    client's but for `model` (whitespace, key order and number spellings stay the client's); None otherwise."""
    raw = ctx.raw_body
    if not raw or len(body) != len(ctx.body):
        return None
    if any(value is not ctx.body.get(key) for key, value in body.items() if key != "model"):
        return None
    return splice_request_model(raw, body)
