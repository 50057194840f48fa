"""The gateway's `Accounting`: rate limits, concurrency, balance holds, settlement and the request log.

Admission (on the hot path, in this order, cheapest refusal first):
1. inference RPM of the team's tier → 429 `rate_limit_exceeded` with `X-RateLimit-*` and `Retry-After`;
2. concurrent in-flight requests of the team → 429 `request_limited`;
3. a hold of the estimated cost (input from the request's size, output from its cap or the model's
   maximum output), taken from the process's credit reservation for the team (`billing.credit`); a team
   whose credit covers less gets an output cap equal to what it covers (`gateway.output_hold`), and 402
   `insufficient_quota` when it cannot cover even the minimum cap (`credit.min_output_tokens`).
Reservations are conditional database updates made once per many requests, so the hot path usually has
no database write at all, and concurrent requests still cannot spend money the team does not have.
Settlement and the log row are queued (see `billing.settlement` and `requestlog.writer`) and written in
batches off the hot path.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any

from modelport.billing.credit import Allocation, CreditBook
from modelport.billing.pricing import CHARS_PER_TOKEN, cost_micros, estimate_input_tokens
from modelport.core.usage import Usage
from modelport.errors import InsufficientQuota, RequestLimited
from modelport.gateway.context import Outcome, Refusal, RequestContext
from modelport.gateway.logsink import RequestLogSink
from modelport.gateway.output_hold import output_hold
from modelport.metrics import SPEND, TEXT_OUTCOMES, TOKENS
from modelport.money import micros_to_usd
from modelport.ratelimit import Lease, Limiters, rate_limit_headers, rate_limited_error
from modelport.services import ServiceKey
from modelport.settings import Settings

log = logging.getLogger("modelport.metering")

LEASE_TTL_SECONDS = 15 * 60
METERING: ServiceKey[Metering] = ServiceKey("metering")


def billed_usage(ctx: RequestContext, outcome: Outcome) -> Usage | None:
    """What a request is billed for. A stream abandoned or cut (client gone, upstream broken, shutdown) is
    billed the larger of the upstream's last cumulative usage and what was counted from the relayed
    stream: the last usage seen may be a placeholder (Anthropic's `message_start` says 1 output token)."""
    usage = outcome.usage
    if outcome.status == "success" or not outcome.produced_chars:
        return usage
    counted = max(1, outcome.produced_chars // CHARS_PER_TOKEN)
    if usage is None:
        return Usage(input_tokens=estimate_input_tokens(ctx.canonical), output_tokens=counted)
    if usage.output_tokens >= counted:
        return usage
    return dataclasses.replace(
        usage, output_tokens=counted, input_tokens=usage.input_tokens or estimate_input_tokens(ctx.canonical)
    )


class Metering:
    def __init__(
        self,
        settings: Settings,
        engine: Any,
        limiters: Limiters,
        credit: CreditBook,
        log_sink: RequestLogSink | None = None,
    ) -> None:
        self._settings = settings
        self._engine = engine
        self._limiters = limiters
        self._credit = credit
        self._allocations: dict[str, Allocation] = {}
        self.log_sink = log_sink
        self._leases: dict[str, Lease] = {}
        self._background: set[asyncio.Task[None]] = set()

    async def admit(self, ctx: RequestContext) -> None:
        tier = self._settings.tier(ctx.auth.tier)
        team = ctx.auth.team_id
        decision = await self._limiters.rate.hit(f"team:{team}:inference", tier.inference_rpm)
        headers = rate_limit_headers(decision)
        if not decision.allowed:
            limited = rate_limited_error(decision, f"inference rate limit of {tier.inference_rpm} requests per minute")
            self._log_refusal(ctx, limited.status, limited.text_message)
            raise limited
        ctx.extra_response_headers.update(headers)
        lease = await self._limiters.concurrency.acquire(
            f"team:{team}:inflight", tier.concurrent_requests, LEASE_TTL_SECONDS
        )
        if lease is None:
            busy = RequestLimited(
                f"too many requests in flight for this team (limit {tier.concurrent_requests})",
                headers={**headers, "Retry-After": "1"},
            )
            self._log_refusal(ctx, busy.status, busy.text_message)
            raise busy
        self._leases[ctx.request_id] = lease
        hold = output_hold(ctx, self._settings.credit.min_output_tokens)
        try:
            allocation = await self._credit.admit(team, hold.estimate, hold.minimum)
        except BaseException:
            await self._release_lease(ctx)
            raise
        if allocation is None:
            await self._release_lease(ctx)
            poor = InsufficientQuota(
                "Insufficient balance: top up the team's balance to use this model",
                code="insufficient_quota",
                headers=headers,
            )
            self._log_refusal(ctx, poor.status, poor.text_message)
            raise poor
        if allocation.estimate_micros < hold.estimate:
            # The team's credit covers less than the model's maximum output: the answer is capped to what it
            # covers, on every path (docs/api/text-gateway.md, Billing).
            ctx.output_cap = hold.covered_tokens(allocation.estimate_micros)
        ctx.held_micros = allocation.estimate_micros
        self._allocations[ctx.request_id] = allocation

    def finish(self, ctx: RequestContext, outcome: Outcome) -> None:
        usage = billed_usage(ctx, outcome)
        cost = cost_micros(usage, ctx.model.prices) if usage is not None else 0
        _record(ctx.model.id, outcome.status, usage, cost)
        # Non-streaming responses are built after this runs, so they carry the cost; streams cannot.
        ctx.extra_response_headers["X-Modelport-Cost"] = str(micros_to_usd(cost))
        allocation = self._allocations.pop(ctx.request_id, None)
        if allocation is not None:
            self._credit.settle(allocation, cost, ctx.request_id)
        lease = self._leases.pop(ctx.request_id, None)
        if lease is not None:
            self._spawn_release(lease)
        if self.log_sink is not None:
            self.log_sink(ctx, outcome, usage, cost)

    def refuse(self, refusal: Refusal) -> None:
        if self.log_sink is not None:
            self.log_sink.early_error(refusal)

    def _log_refusal(self, ctx: RequestContext, status: int, message: str) -> None:
        if self.log_sink is not None:
            self.log_sink(ctx, Outcome("error", status, error=message), None, 0)

    async def _release_lease(self, ctx: RequestContext) -> None:
        lease = self._leases.pop(ctx.request_id, None)
        if lease is not None:
            await self._limiters.concurrency.release(lease)

    def _spawn_release(self, lease: Lease) -> None:
        task = asyncio.get_running_loop().create_task(self._limiters.concurrency.release(lease))
        self._background.add(task)
        task.add_done_callback(self._release_done)

    def _release_done(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("releasing a concurrency lease failed: %s", task.exception())

    async def aclose(self) -> None:
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)


def _record(model: str, status: str, usage: Usage | None, cost: int) -> None:
    TEXT_OUTCOMES.labels(model, status).inc()
    if usage is not None:
        TOKENS.labels(model, "input").inc(max(0, usage.input_tokens))
        TOKENS.labels(model, "output").inc(max(0, usage.output_tokens))
    if cost > 0:
        SPEND.labels(model).inc(cost / 1_000_000)
