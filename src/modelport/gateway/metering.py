"""The gateway's metering: rate limits, concurrency, balance holds, settlement and the request log.

Admission (on the hot path, in this order, cheapest refusal first):
1. inference RPM of the team's tier → 429 `rate_limit_exceeded` with `X-RateLimit-*` and `Retry-After`;
   then the key's own RPM, the tier's TPM and the key's TPM (tokens: the estimated input + the client's output
   cap, else `credit.min_output_tokens`; corrected to the usage when the request ends), each 429 with that
   limit's own headers;
2. concurrent in-flight requests of the team → 429 `request_limited`;
3. a hold of the estimated cost (input from the request's size, output from its cap or the model's
   maximum output), taken from the process's credit reservation for the team (`billing.credit`); a team
   whose credit covers less gets an output cap equal to what it covers (`gateway.output_hold`), and 402
   `insufficient_quota` when it cannot cover even the minimum cap (`credit.min_output_tokens`); for a key
   with a spend limit the reservation is the key's, held against its limit too → 402 with
   `code: key_budget_exceeded`.
Reservations are conditional database updates made once per many requests, so the hot path usually has
no database write at all, and concurrent requests still cannot spend money the team does not have.
Settlement and the log row are queued (see `billing.settlement` and `requestlog.writer`) and written in
batches off the hot path.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Coroutine, Sequence
from typing import Any

from modelport.billing import notify
from modelport.billing.credit import CreditBook
from modelport.billing.key_budget import KeyBudgetShort, key_hold
from modelport.billing.pricing import CHARS_PER_TOKEN, Priced, estimate_input_tokens, price_usage
from modelport.billing.rates import PriceTier
from modelport.clock import now_ms
from modelport.core.usage import Usage
from modelport.errors import InsufficientQuota, RateLimited, RequestLimited
from modelport.gateway.context import Admission, Outcome, Refusal, RequestContext
from modelport.gateway.logsink import RequestLogSink
from modelport.gateway.output_hold import output_hold
from modelport.metrics import SPEND, TEXT_OUTCOMES, TOKENS
from modelport.metrics import enabled as metrics_enabled
from modelport.ratelimit import Lease, Limiters, rate_limit_headers, rate_limited_error
from modelport.requestlog.record import RequestStatus
from modelport.services import ServiceKey
from modelport.settings import Settings
from modelport.web.key_rate import key_rpm_limiter_key, key_tpm_limiter_key

log = logging.getLogger("modelport.metering")

LEASE_TTL_SECONDS = 15 * 60
# How long token-per-minute corrections (usage against the admission estimate) are gathered before applied.
TOKEN_FLUSH_SECONDS = 0.05
METERING: ServiceKey[Metering] = ServiceKey("metering")
UNPRICED = Priced(0, PriceTier.STANDARD)  # no usage to bill
Counted = tuple[str, int, int]  # a count against a token-per-minute limit: (limiter key, limit, tokens)


def billed_usage(ctx: RequestContext, outcome: Outcome) -> Usage | None:
    """What a request is billed for. A stream abandoned or cut (client gone, upstream broken, shutdown) is
    billed the larger of the upstream's last cumulative usage and what was counted from the relayed
    stream: the last usage seen may be a placeholder (Anthropic's `message_start` says 1 output token).
    A request the client abandoned once it was sent upstream is billed at least its input (the upstream's
    count, else the estimate) whatever was relayed: the upstream did the work, on every pair of protocols
    (a translated stream may relay no text before the hang-up; a non-streaming call may be left before
    the upstream answered at all)."""
    usage = outcome.usage
    if outcome.status == RequestStatus.SUCCESS:
        return usage
    abandoned = outcome.status == RequestStatus.CANCELLED and (
        outcome.deployment is not None or outcome.upstream_called
    )
    relayed = outcome.produced_chars > 0 or outcome.relayed_events > 0
    if not relayed and not abandoned:
        return usage
    # About one token per relayed fast-path event, and per CHARS_PER_TOKEN characters of translated output.
    counted = max(1, outcome.produced_chars // CHARS_PER_TOKEN + outcome.relayed_events) if relayed else 0
    if usage is None:
        return Usage(input_tokens=estimate_input_tokens(ctx.canonical), output_tokens=counted)
    if usage.output_tokens >= counted and usage.input_tokens:
        return usage
    return dataclasses.replace(
        usage,
        output_tokens=max(usage.output_tokens, counted),
        input_tokens=usage.input_tokens or estimate_input_tokens(ctx.canonical),
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
        self.log_sink = log_sink
        self._corrections: dict[str, list[int]] = {}  # limiter key -> [limit, tokens to add (or give back)]
        self._flush: asyncio.TimerHandle | None = None
        self._background: set[asyncio.Task[None]] = set()

    async def admit(self, ctx: RequestContext, *, in_flight: bool = True) -> Admission:
        """Let the request through (what was decided is returned; nothing on `ctx` is written) or raise the
        refusal, after logging it. The hold, the in-flight lease and the counted tokens travel in the returned
        `Admission` until `settle` gives them back; a refusal gives back what it had taken. `in_flight`
        False: the team's concurrency limit is not checked (a background response's creation: it waits in
        the queue, and its run takes the slot)."""
        tier = self._settings.tier(ctx.auth.tier)
        team = ctx.auth.team_id
        limits = ctx.auth.limits
        headers: dict[str, str] = {}
        if ctx.background_run is None:  # a background response's run: counted when the response was created
            decision = await self._limiters.rate.hit(f"team:{team}:inference", tier.inference_rpm)
            headers = rate_limit_headers(decision)
            if not decision.allowed:
                limited = rate_limited_error(
                    decision, f"inference rate limit of {tier.inference_rpm} requests per minute"
                )
                self._log_refusal(ctx, limited.status, limited.text_message)
                raise limited
            if limits is not None and limits.rpm is not None:
                await self._rate(
                    ctx,
                    key_rpm_limiter_key(ctx.auth.key_id),
                    limits.rpm,
                    1,
                    "this API key's rate limit of {} requests per minute",
                )
        hold = output_hold(ctx, self._settings.credit.min_output_tokens)
        tokens = 0
        counted: tuple[Counted, ...] = ()  # the token counts made, given back if refused
        if tier.tpm is not None or (limits is not None and limits.tpm is not None):
            # The client's cap, else the minimum output cap: a rate limit, not money, so the model's whole
            # maximum output is not assumed; the count is corrected to the usage when the request ends.
            client_cap = ctx.canonical.max_output_tokens
            expected_output = min(hold.bound, client_cap or self._settings.credit.min_output_tokens)
            tokens = estimate_input_tokens(ctx.canonical) + expected_output
            if tier.tpm is not None:
                counted += (
                    await self._rate(
                        ctx, f"team:{team}:tpm", tier.tpm, tokens, "the team's limit of {} tokens per minute", counted
                    ),
                )
            if limits is not None and limits.tpm is not None:
                counted += (
                    await self._rate(
                        ctx,
                        key_tpm_limiter_key(ctx.auth.key_id),
                        limits.tpm,
                        tokens,
                        "this API key's limit of {} tokens per minute",
                        counted,
                    ),
                )
        lease = (
            await self._limiters.concurrency.acquire(
                f"team:{team}:inflight", tier.concurrent_requests, LEASE_TTL_SECONDS
            )
            if in_flight
            else None
        )
        if lease is None and in_flight:
            self._return_tokens(counted)
            busy = RequestLimited(
                f"too many requests in flight for this team (limit {tier.concurrent_requests})",
                headers={**headers, "Retry-After": "1"},
            )
            self._log_refusal(ctx, busy.status, busy.text_message)
            raise busy
        try:
            key = None if limits is None else key_hold(ctx.auth.key_id, limits, now_ms())
            allocation = await self._credit.admit(team, hold.estimate, key, hold.minimum)
        except KeyBudgetShort:
            await self._release_lease(lease)
            self._return_tokens(counted)
            spent = InsufficientQuota(
                "Insufficient balance: the API key's spend limit is reached",
                code="key_budget_exceeded",
                headers=headers,
            )
            self._log_refusal(ctx, spent.status, spent.text_message)
            raise spent from None
        except BaseException:
            await self._release_lease(lease)
            self._return_tokens(counted)
            raise
        if allocation is None:
            await self._release_lease(lease)
            self._return_tokens(counted)
            await notify.balance_exhausted(self._engine, team)  # the first 402 since the last top-up
            poor = InsufficientQuota(
                "Insufficient balance: top up the team's balance to use this model",
                code="insufficient_quota",
                headers=headers,
            )
            self._log_refusal(ctx, poor.status, poor.text_message)
            raise poor
        # The team's credit covers less than the model's maximum output: the answer is capped to what it
        # covers, on every path (docs/api/text-gateway.md, Billing).
        held = allocation.estimate_micros
        cap = hold.covered_tokens(held) if held < hold.estimate else None
        return Admission(
            held_micros=held,
            output_cap=cap,
            headers=headers,
            tpm_tokens=tokens,
            allocation=allocation,
            lease=lease,
            counted=counted,
        )

    async def admit_hit(self, ctx: RequestContext, cost_micros: int) -> Admission:
        """Admit an answer from the response cache: it counts toward the team's and the key's requests per
        minute but not their tokens, holds no in-flight slot (no upstream is called) and holds exactly its
        cost (none when hits are free); refused like `admit`."""
        tier = self._settings.tier(ctx.auth.tier)
        team = ctx.auth.team_id
        decision = await self._limiters.rate.hit(f"team:{team}:inference", tier.inference_rpm)
        headers = rate_limit_headers(decision)
        if not decision.allowed:
            limited = rate_limited_error(decision, f"inference rate limit of {tier.inference_rpm} requests per minute")
            self._log_refusal(ctx, limited.status, limited.text_message)
            raise limited
        limits = ctx.auth.limits
        if limits is not None and limits.rpm is not None:
            await self._rate(
                ctx,
                key_rpm_limiter_key(ctx.auth.key_id),
                limits.rpm,
                1,
                "this API key's rate limit of {} requests per minute",
            )
        if cost_micros <= 0:
            return Admission(held_micros=0, output_cap=None, headers=headers, tpm_tokens=0)
        try:
            key = None if limits is None else key_hold(ctx.auth.key_id, limits, now_ms())
            allocation = await self._credit.admit(team, cost_micros, key)
        except KeyBudgetShort:
            spent = InsufficientQuota(
                "Insufficient balance: the API key's spend limit is reached",
                code="key_budget_exceeded",
                headers=headers,
            )
            self._log_refusal(ctx, spent.status, spent.text_message)
            raise spent from None
        if allocation is None:
            poor = InsufficientQuota(
                "Insufficient balance: top up the team's balance to use this model",
                code="insufficient_quota",
                headers=headers,
            )
            self._log_refusal(ctx, poor.status, poor.text_message)
            raise poor
        return Admission(held_micros=cost_micros, output_cap=None, headers=headers, tpm_tokens=0, allocation=allocation)

    async def _rate(
        self,
        ctx: RequestContext,
        key: str,
        limit: int,
        cost: int,
        detail: str,
        made: Sequence[Counted] = (),
    ) -> Counted:
        """Count `cost` against a limit of the key or team (a request larger than a whole minute's tokens
        counts as that minute) and return the count made; 429 with that limit's own headers when it does not
        fit, after giving back the counts `made` before it."""
        cost = min(cost, limit)
        decision = await self._limiters.rate.hit(key, limit, 60, cost)
        if not decision.allowed:
            limited = RateLimited(detail.format(limit), headers=rate_limit_headers(decision))
            self._log_refusal(ctx, limited.status, limited.text_message)
            self._return_tokens(made)
            raise limited
        return key, limit, cost

    def _return_tokens(self, counted: Sequence[Counted], usage: Usage | None = None) -> None:
        """Correct the tokens counted on admission to what the request used (all of them back if refused)."""
        if not counted:
            return
        used = 0 if usage is None else usage.input_tokens + usage.output_tokens
        for key, limit, cost in counted:
            delta = min(used, limit) - cost
            if delta:
                self._correct(key, limit, delta)

    def _correct(self, key: str, limit: int, delta: int) -> None:
        # Corrections are summed per limiter key and applied together every TOKEN_FLUSH_SECONDS: one
        # background task per flush rather than one per request (a task costs more than the rest of it).
        entry = self._corrections.get(key)
        if entry is None:
            self._corrections[key] = [limit, delta]
        else:
            entry[0], entry[1] = limit, entry[1] + delta
        if self._flush is None:
            self._flush = asyncio.get_running_loop().call_later(TOKEN_FLUSH_SECONDS, self._flush_corrections)

    def _flush_corrections(self) -> None:
        self._flush = None
        corrections, self._corrections = self._corrections, {}
        self._spawn(self._apply(corrections))

    async def _apply(self, corrections: dict[str, list[int]]) -> None:
        for key, (limit, delta) in corrections.items():
            if delta:
                await self._limiters.rate.adjust(key, limit, 60, delta)

    def finish(self, ctx: RequestContext, outcome: Outcome) -> int:
        """Settle and log the request (once); returns its cost in micro-USD."""
        usage, priced = self.price(ctx, outcome)
        self.settle(ctx, outcome, usage, priced)
        return priced.cost_micros

    def price(self, ctx: RequestContext, outcome: Outcome) -> tuple[Usage | None, Priced]:
        """What the request is billed for, its cost in micro-USD and the price table applied, at the
        catalog's prices of now (the log row keeps the cost); nothing is settled yet (`settle`)."""
        usage = billed_usage(ctx, outcome)
        if usage is None:
            return None, UNPRICED
        prices = (outcome.served or ctx.model).prices  # a fallback model that served: its prices
        return usage, price_usage(usage, prices, anthropic=_anthropic(ctx, outcome))

    def settle(self, ctx: RequestContext, outcome: Outcome, usage: Usage | None, priced: Priced) -> None:
        """Settle and log the request (once) at the price `price` gave: limiter counts corrected, the hold
        settled, the concurrency lease released, the log row queued."""
        cost = priced.cost_micros
        admission = ctx.admission
        if admission.counted:
            self._return_tokens(admission.counted, usage)
        _record(ctx.model.id, outcome.status, usage, cost)
        if admission.allocation is not None:
            self._credit.settle(admission.allocation, cost, ctx.request_id)
        if admission.lease is not None:
            self._spawn_release(admission.lease)
        if self.log_sink is not None:
            self.log_sink(ctx, outcome, usage, priced)

    async def _release_lease(self, lease: Lease | None) -> None:
        if lease is not None:
            await self._limiters.concurrency.release(lease)

    def void(self, ctx: RequestContext) -> None:
        """Give back what admission took (the hold, the in-flight slot, the counted tokens), charging and
        logging nothing: a background response checked at its creation, or an attempt of one that does not
        count (cut by its process's end, or taken over by another attempt)."""
        admission = ctx.admission
        if admission.counted:
            self._return_tokens(admission.counted)
        if admission.allocation is not None:
            self._credit.settle(admission.allocation, 0, ctx.request_id)
        if admission.lease is not None:
            self._spawn_release(admission.lease)

    def refuse(self, refusal: Refusal) -> None:
        if self.log_sink is not None:
            self.log_sink.early_error(refusal)

    def _log_refusal(self, ctx: RequestContext, status: int, message: str) -> None:
        if self.log_sink is not None:
            self.log_sink(ctx, Outcome(RequestStatus.ERROR, status, error=message), None, UNPRICED)

    def _spawn_release(self, lease: Lease) -> None:
        # In-process limits release at once: no task per request (about 2 % of a fast-path request's CPU).
        if not self._limiters.concurrency.release_nowait(lease):
            self._spawn(self._limiters.concurrency.release(lease))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._release_done)

    def _release_done(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("releasing a limiter's count failed: %s", task.exception())

    async def aclose(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush_corrections()
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)


def _anthropic(ctx: RequestContext, outcome: Outcome) -> bool:
    """An `anthropic` deployment answered (none did: the model's first deployment, as routing tries it)."""
    kind = outcome.deployment_kind or ctx.model.deployments[0].kind
    return kind == "anthropic"


def _record(model: str, status: RequestStatus, usage: Usage | None, cost: int) -> None:
    if not metrics_enabled():
        return
    TEXT_OUTCOMES.labels(model, status).inc()
    if usage is not None:
        TOKENS.labels(model, "input").inc(max(0, usage.input_tokens))
        TOKENS.labels(model, "output").inc(max(0, usage.output_tokens))
    if cost > 0:
        SPEND.labels(model).inc(cost / 1_000_000)
