"""The text pipeline's two response cache hooks (docs/api/cache.md), for teams whose cache is on:
`CachedAnswers.answer` before any upstream attempt (the plan, the lookup, a hit answered from the cache:
admitted, billed and logged as a hit), and `CachedAnswers.keep` once an answer from the upstream has
ended well (stored in the background). The cache itself is `response_cache/`."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from functools import partial
from typing import Any

from starlette.requests import Request

from modelport.billing.pricing import Priced
from modelport.billing.rates import PriceTier
from modelport.clock import now_ms
from modelport.core.accumulate import StreamAccumulator
from modelport.errors import InvalidParameters
from modelport.gateway.answer import BodyAnswer, Chunks, StreamAnswer
from modelport.gateway.context import Outcome, Refusal, RequestContext
from modelport.gateway.metering import Metering
from modelport.gateway.stored_responses import StoredResponses
from modelport.money import micros_to_usd
from modelport.requestlog.record import RequestStatus
from modelport.response_cache import ResponseCache
from modelport.response_cache.controls import HEADER
from modelport.response_cache.entry import Entry
from modelport.response_cache.replay import fresh_response, replay_body, replay_stream


class CachedAnswers:
    def __init__(self, cache: ResponseCache, metering: Metering, responses: StoredResponses | None = None) -> None:
        self.cache = cache
        self._metering = metering
        self._responses = responses

    async def answer(self, request: Request, ctx: RequestContext) -> BodyAnswer | StreamAnswer | None:
        """A hit's answer, or None: the request goes upstream (`X-Modelport-Cache: miss` or `skip` on its
        answer, and `ctx.cache` says whether its answer is stored)."""
        auth = ctx.auth
        try:
            plan = self.cache.plan(
                auth.team_id,
                auth.key_id,
                auth.cache,
                auth.cache_tool_calls,
                request.scope["headers"],
                ctx.codec,
                ctx.canonical,
            )
        except InvalidParameters as exc:  # a control header with a bad value: refused, and logged
            self._metering.refuse(Refusal(ctx.request_id, auth, ctx.endpoint, ctx.body, ctx.started_ms, exc))
            raise
        ctx.cache = plan
        entry = await self.cache.lookup(plan)
        ctx.extra_response_headers[HEADER] = plan.result
        if entry is None:
            return None
        return await self._hit(ctx, entry)

    async def _hit(self, ctx: RequestContext, entry: Entry) -> BodyAnswer | StreamAnswer:
        assert ctx.cache is not None
        cost = self.cache.hit_cost(entry)
        ctx.cache.saved_micros = max(0, entry.cost_micros - cost)
        admission = await self._metering.admit_hit(ctx, cost)
        ctx.admission = admission
        headers = ctx.extra_response_headers
        headers.update(admission.headers)
        headers["Age"] = str(max(0, (now_ms() - entry.stored_at_ms) // 1000))
        headers["X-Modelport-Cost"] = str(micros_to_usd(cost))
        codec, canonical = ctx.codec, ctx.canonical
        response_id = codec.response_id_prefix + ctx.request_id.removeprefix("req_")
        response = fresh_response(codec, entry.body, canonical.model, response_id)
        usage = response.usage
        outcome = Outcome(status=RequestStatus.SUCCESS, usage=usage, result=entry.body, upstream_called=False)
        settle = partial(self._metering.settle, ctx, outcome, usage, Priced(cost, PriceTier.STANDARD))
        state, keep = codec.server_state, ctx.keep
        if not ctx.stream:
            content = replay_body(codec, canonical, response)
            try:
                if keep is not None and state is not None and self._responses is not None:
                    await self._responses.keep_body(state, keep, content)
            except BaseException:
                settle()
                raise
            body = BodyAnswer(content, headers=headers)
            body.after = settle
            return body
        chunks: Chunks = _frames(replay_stream(codec, canonical, response))
        if keep is not None and state is not None and self._responses is not None:
            chunks = self._responses.keeping(state, chunks, keep)
        stream = StreamAnswer(chunks, headers=headers)
        stream.after = settle
        return stream

    def keep(self, ctx: RequestContext, outcome: Outcome, cost_micros: int) -> None:
        """Store the answer of a request that ended well (a body of the client's protocol)."""
        plan = ctx.cache
        if plan is None or outcome.status != RequestStatus.SUCCESS or outcome.result is None:
            return
        body: Any = outcome.result
        if isinstance(body, StreamAccumulator):
            if body.error is not None:
                return
            body = ctx.codec.encode_response(body.response(), ctx.canonical.model, request=ctx.canonical)
        if isinstance(body, dict):
            self.cache.keep(plan, ctx.codec, body, cost_micros)


async def _frames(frames: Iterator[bytes]) -> AsyncGenerator[bytes, None]:
    for frame in frames:
        yield frame
