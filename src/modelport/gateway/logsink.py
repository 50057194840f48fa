"""Turns a finished text request into its `request_logs` row and hands it to the batched writer."""

from __future__ import annotations

from typing import Any

from modelport.billing.pricing import Priced
from modelport.core.accumulate import StreamAccumulator
from modelport.core.redaction import UPSTREAM_SECRETS
from modelport.core.usage import Usage
from modelport.gateway.context import Outcome, Refusal, RequestContext
from modelport.requestlog.payloads import PayloadPolicy
from modelport.requestlog.record import LogRecord, RequestStatus
from modelport.requestlog.writer import RequestLogWriter
from modelport.response_cache import Result

UNKNOWN = "unknown"


class RequestLogSink:
    def __init__(self, writer: RequestLogWriter, *, max_payload_bytes: int) -> None:
        self._writer = writer
        self._retain = PayloadPolicy(True, max_payload_bytes)

    def __call__(self, ctx: RequestContext, outcome: Outcome, usage: Usage | None, priced: Priced) -> None:
        keep = ctx.auth.log_retention
        self._writer.record(
            LogRecord(
                id=ctx.request_id,
                team_id=ctx.auth.team_id,
                created_at_ms=ctx.started_ms,
                status=outcome.status,
                provider=ctx.model.provider,
                model_name=ctx.model.name,
                endpoint=ctx.endpoint,
                error=UPSTREAM_SECRETS.scrub_optional(outcome.error),
                prompt_tokens=usage.input_tokens if usage else None,
                completion_tokens=usage.output_tokens if usage else None,
                cached_tokens=usage.cache_read_tokens if usage else None,
                cache_write_tokens=usage.cache_write_tokens if usage else None,
                cache_write_1h_tokens=usage.cache_write_1h_tokens if usage else None,
                cost_micros=priced.cost_micros,
                price_tier=priced.tier if usage else None,
                served_model=outcome.served.id if outcome.served is not None else None,
                svc_user_id=ctx.svc_user_id,
                session_id=ctx.session_id,
                input=self._retain.payload(ctx.body) if keep else None,
                result=self._result(ctx, outcome) if keep and outcome.result is not None else None,
                key_id=ctx.auth.key_id,
                cache=None if ctx.cache is None else ctx.cache.result,
                cache_saved_micros=_saved(ctx),
                previous_response_id=ctx.keep.previous_id if ctx.keep is not None else None,
                conversation_id=ctx.keep.conversation_id if ctx.keep is not None else None,
            )
        )

    def _result(self, ctx: RequestContext, outcome: Outcome) -> str | None:
        kept = self._retain.payload(_result(ctx, outcome.result))
        # A failed answer may carry the upstream's error text, which may quote its key.
        return kept if outcome.status == RequestStatus.SUCCESS else UPSTREAM_SECRETS.scrub_optional(kept)

    def early_error(self, refusal: Refusal) -> None:
        """A request refused before it was routed (bad body, unknown model): logged with what is known."""
        body, auth, error = refusal.body, refusal.auth, refusal.error
        model = body.get("model") if isinstance(body, dict) else None
        provider, _, name = model.partition("/") if isinstance(model, str) else (UNKNOWN, "", UNKNOWN)
        self._writer.record(
            LogRecord(
                id=refusal.request_id,
                team_id=auth.team_id,
                created_at_ms=refusal.started_ms,
                status=RequestStatus.ERROR,
                provider=provider or UNKNOWN,
                model_name=name or provider or UNKNOWN,
                endpoint=refusal.endpoint,
                error=f"{error.status}: {error.text_message}",
                input=self._retain.payload(body) if auth.log_retention and body is not None else None,
                key_id=auth.key_id,
            )
        )


def _saved(ctx: RequestContext) -> int | None:
    """What a response cache hit saved (None: not a hit)."""
    plan = ctx.cache
    return plan.saved_micros if plan is not None and plan.result == Result.HIT else None


def _result(ctx: RequestContext, result: Any) -> Any:
    if isinstance(result, StreamAccumulator):
        return ctx.codec.encode_response(result.response(), ctx.canonical.model, request=ctx.canonical)
    return result
