"""Opening the upstream call: build the body for each deployment in turn, fall back on failure.

Fallback happens only before the client has seen a byte: once a deployment answers 200 the answer is
committed. Same-protocol deployments take the fast path (the client's body with only `model` changed);
others get the request translated from the canonical form.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from modelport.catalog_spec import Deployment
from modelport.core.codec import ProtocolCodec
from modelport.errors import ModelUnavailable
from modelport.gateway.context import RequestContext
from modelport.gateway.routing import Candidate, DeploymentRouter
from modelport.gateway.upstream_errors import (
    client_error_for,
    exhausted_error,
    is_deployment_fault,
    is_retryable,
)
from modelport.protocols import get_codec
from modelport.upstreams.kinds import ANTHROPIC_DEFAULT_VERSION, auth_headers, protocol_of
from modelport.upstreams.pool import UpstreamPool
from modelport.upstreams.transport import UpstreamReply, UpstreamUnreachable


@dataclass(slots=True)
class OpenCall:
    candidate: Candidate
    fast: bool
    upstream_protocol: str
    upstream_codec: ProtocolCodec
    reply: UpstreamReply
    # The client asked for no usage chunk but we asked the upstream for one (Chat streams): drop it.
    strip_usage_chunk: bool


def _retry_after(reply: UpstreamReply) -> float | None:
    value = reply.headers.get("retry-after")
    try:
        return float(value) if value else None
    except ValueError:
        return None


class UpstreamCaller:
    def __init__(self, pool: UpstreamPool, router: DeploymentRouter) -> None:
        self.pool = pool
        self.router = router

    async def open(self, ctx: RequestContext) -> OpenCall:
        candidates = self.router.plan(ctx.model, ctx.session_id)
        usable = [c for c in candidates if not self.router.is_cooling(c)]
        if not usable:
            raise ModelUnavailable(
                "the model is temporarily unavailable; retry later or switch model",
                headers={"Retry-After": str(self.router.retry_after(candidates))},
            )
        last_status: int | None = None
        for candidate in usable:
            deployment = candidate.deployment
            up_protocol = protocol_of(deployment)
            fast = up_protocol == ctx.protocol and not ctx.rewritten
            body, strip_usage = self._body(ctx, deployment, up_protocol, fast)
            headers = self._headers(ctx, deployment, up_protocol)
            try:
                reply = await self.pool.transport(deployment).send(body, headers, stream=ctx.stream)
            except UpstreamUnreachable:
                self.router.fail(candidate, rate_limited=False)
                last_status = None
                continue
            if reply.status == 200:
                self.router.succeed(candidate)
                return OpenCall(candidate, fast, up_protocol, get_codec(up_protocol), reply, strip_usage)
            payload = await reply.read_all()
            await reply.release()
            if is_retryable(reply.status) or is_deployment_fault(reply.status, payload):
                self.router.fail(candidate, rate_limited=reply.status == 429, retry_after=_retry_after(reply))
                last_status = reply.status
                continue
            raise client_error_for(reply.status, payload)
        raise exhausted_error(last_status, self.router.retry_after(candidates))

    def _body(
        self, ctx: RequestContext, deployment: Deployment, up_protocol: str, fast: bool
    ) -> tuple[dict[str, Any], bool]:
        if fast:
            body = dict(ctx.body)
            body["model"] = deployment.model
        else:
            canonical = ctx.canonical
            if canonical.max_output_tokens is None and up_protocol == "anthropic_messages":
                # Messages requires a cap; use the catalog's default for the model.
                canonical = dataclasses.replace(canonical, max_output_tokens=ctx.model.default_max_output_tokens)
            body = get_codec(up_protocol).encode_request(canonical, deployment.model)
            body["stream"] = ctx.stream
        strip_usage = False
        if ctx.stream and up_protocol == "openai_chat":
            # Always ask for usage so the stream can be billed; hide it if the client did not ask.
            options = dict(body.get("stream_options") or {})
            strip_usage = fast and not options.get("include_usage")
            options["include_usage"] = True
            body["stream_options"] = options
        elif not ctx.stream:
            body.pop("stream_options", None)
        return body, strip_usage

    def _headers(self, ctx: RequestContext, deployment: Deployment, up_protocol: str) -> dict[str, str]:
        headers = {**deployment.headers, **auth_headers(deployment, self.pool.api_key(deployment))}
        if up_protocol == "anthropic_messages":
            headers["anthropic-version"] = ctx.headers.get("anthropic-version", ANTHROPIC_DEFAULT_VERSION)
            if "anthropic-beta" in ctx.headers:
                headers["anthropic-beta"] = ctx.headers["anthropic-beta"]
        if ctx.stream:
            headers["accept"] = "text/event-stream"
        return headers
