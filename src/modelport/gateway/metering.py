"""The gateway's `Accounting`: rate limits, concurrency, balance holds, settlement and the request log.

Admission (on the hot path, in this order, cheapest refusal first):
1. inference RPM of the team's tier → 429 `rate_limit_exceeded` with `X-RateLimit-*` and `Retry-After`;
2. concurrent in-flight requests of the team → 429 `request_limited`;
3. a hold of the estimated cost (input from the request's size, output from its cap or the model's
   default cap), taken from the process's credit reservation for the team (`billing.credit`) → 402
   `insufficient_quota` when the team's balance cannot cover it.
Reservations are conditional database updates made once per many requests, so the hot path usually has
no database write at all, and concurrent requests still cannot spend money the team does not have.
Settlement and the log row are queued (see `billing.settlement` and `requestlog.writer`) and written in
batches off the hot path.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from modelport.accounts.auth import AuthContext
from modelport.billing.credit import Allocation, CreditBook
from modelport.billing.pricing import CHARS_PER_TOKEN, cost_micros, estimate_input_tokens, estimated_usage
from modelport.core.usage import Usage
from modelport.errors import InsufficientQuota, RequestLimited, ServiceError
from modelport.gateway.context import Outcome, RequestContext
from modelport.gateway.logsink import RequestLogSink
from modelport.money import micros_to_usd
from modelport.ratelimit import Lease, Limiters, rate_limit_headers, rate_limited_error
from modelport.settings import Settings

log = logging.getLogger("modelport.metering")

LEASE_TTL_SECONDS = 15 * 60


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
        max_out = ctx.canonical.max_output_tokens or ctx.model.default_max_output_tokens
        # At least one micro-USD: a team with nothing left is refused even for a (nearly) free model.
        estimate = max(1, cost_micros(estimated_usage(ctx.canonical, max_out), ctx.model.prices))
        try:
            allocation = await self._credit.admit(team, estimate)
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
        ctx.held_micros = estimate
        self._allocations[ctx.request_id] = allocation

    def finish(self, ctx: RequestContext, outcome: Outcome) -> None:
        usage = outcome.usage
        if usage is None and outcome.status == "cancelled" and outcome.produced_chars:
            # Abandoned before the upstream reported usage: bill what it produced, counted from the stream.
            usage = Usage(
                input_tokens=estimate_input_tokens(ctx.canonical),
                output_tokens=max(1, outcome.produced_chars // CHARS_PER_TOKEN),
            )
        cost = cost_micros(usage, ctx.model.prices) if usage is not None else 0
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

    def refuse(
        self,
        request_id: str,
        auth: AuthContext,
        endpoint: str,
        body: dict[str, Any] | None,
        started_ms: int,
        error: ServiceError,
    ) -> None:
        if self.log_sink is not None:
            self.log_sink.early_error(request_id, auth, endpoint, body, started_ms, error.status, error.text_message)

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

    async def drain(self) -> None:
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
