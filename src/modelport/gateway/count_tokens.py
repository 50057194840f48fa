"""A protocol's token counting route (`ProtocolCodec.token_count`; Messages' `POST /v1/messages/count_tokens`):
how many input tokens a request would use.

Exact when the model has a deployment whose kind has a counting endpoint
(`UpstreamKindSpec.count_tokens_path`, Anthropic's): the request goes to that upstream's own counting
endpoint (the deployments in routing order; one that is rate limited, failing or without the endpoint is
skipped). Exact for the embedded local model too: the request, translated to Chat Completions as a call
would be, goes through the model's own chat template and tokenizer (llama.cpp; nothing is generated).
The deployments are tried by the one attempt loop (`attempts.py`) as a free call: no deployment's health
counts it. Otherwise, or when no such upstream answers, the gateway's estimate (the one it holds credit
with: characters / 4, a fixed amount per media part, + 16); the answer says which with `estimated`.
Input certainly longer than the model's context window (more than 16 characters per token of it) is
answered from the estimate with `over_context_window`, never tokenized: counting is free, so its CPU is
capped (and embedded-model counts run at most `LOCAL_COUNT_SLOTS` at once, on the model's threads).
A query: counted against the query rate limit, not billed, no request-log row.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport import tracing
from modelport.accounts.auth import AuthContext
from modelport.billing.pricing import CHARS_PER_TOKEN, estimate_input_tokens
from modelport.catalog_spec import Deployment
from modelport.core.codec import ProtocolCodec, TokenCount
from modelport.core.messages import CanonicalRequest
from modelport.errors import ServiceError
from modelport.gateway.attempts import Answered, Attempt
from modelport.gateway.headers import session_id
from modelport.gateway.openapi_docs import TOKEN_COUNT, request_body
from modelport.gateway.pipeline import FORWARDED_HEADERS, TEXT_GATEWAY, read_json_body
from modelport.gateway.routing import Candidate, DeploymentRouter
from modelport.protocols import CODECS
from modelport.upstreams.kinds import auth_headers, codec_of, count_tokens_url
from modelport.upstreams.pool import UpstreamPool
from modelport.upstreams.transport import UpstreamReply
from modelport.web.deps import get_services, text_auth
from modelport.web.envelope import JSONBytesResponse
from modelport.web.query_limit import enforce_query_limit

router = APIRouter(tags=["text"])

# The counted input is capped at the model's context window: text longer than `window` tokens of this
# many characters each (well above any tokenizer's average) is over the window whatever its count, and is
# answered as such from the estimate. A model without a catalog window counts up to this many tokens.
MAX_CHARS_PER_TOKEN = 16
DEFAULT_WINDOW_TOKENS = 200_000
# Embedded-model counts running at once in this process (each takes a worker thread of the model); more
# get the estimate at once. CPU spent on unbilled counting stays bounded.
LOCAL_COUNT_SLOTS = 2
_LOCAL_COUNTS = asyncio.Semaphore(LOCAL_COUNT_SLOTS)

COUNTING = tuple(codec for codec in CODECS.values() if codec.token_count is not None)
COUNT_PATHS = frozenset(codec.token_count.path for codec in COUNTING if codec.token_count is not None)


def _route(codec: ProtocolCodec, count: TokenCount) -> Callable[[Request, AuthContext], Awaitable[Response]]:
    async def route(request: Request, auth: AuthContext = Depends(text_auth)) -> Response:
        return await count_tokens(request, auth, codec, count)

    return route


for _codec in COUNTING:
    assert _codec.token_count is not None
    router.add_api_route(
        _codec.token_count.path,
        _route(_codec, _codec.token_count),
        methods=["POST"],
        name=f"{_codec.route.operation}_count_tokens",
        summary=_codec.token_count.summary,
        responses={
            200: {"description": "The count", "content": {"application/json": {"schema": TOKEN_COUNT}}},
            400: {"description": "Invalid request"},
            404: {"description": "Unknown model"},
        },
        openapi_extra=request_body(_codec, required=list(_codec.token_count.required_fields)),
    )


async def count_tokens(request: Request, auth: AuthContext, codec: ProtocolCodec, count: TokenCount) -> Response:
    limit_headers = await enforce_query_limit(request, auth)
    body = await read_json_body(request)
    gateway = get_services(request)[TEXT_GATEWAY]
    if codec.server_state is not None and gateway.responses is not None:
        # The earlier turns it refers to (`previous_response_id`, a conversation) count as its input.
        body, _, _ = await gateway.responses.prepare(codec.server_state, auth.team_id, body, b"")
    canonical = count.decode_request(body, request.headers)
    model = await gateway.resolve_model(canonical.model, auth)
    estimate = estimate_input_tokens(canonical)
    window = model.context_window or DEFAULT_WINDOW_TOKENS
    if (estimate - 16) * CHARS_PER_TOKEN > window * MAX_CHARS_PER_TOKEN:
        # Certainly past the context window: say so, without tokenizing (or sending) megabytes of text.
        answer = {
            **count.answer_fields,
            "input_tokens": estimate,
            "estimated": True,
            "over_context_window": True,
            "context_window": window,
        }
        return JSONBytesResponse(answer, headers=limit_headers)
    forwarded = {h: request.headers[h] for h in FORWARDED_HEADERS if h in request.headers}
    counting = _Counting(codec, count, canonical, body, forwarded)
    exact = await gateway.caller.attempt(model, session_id(request.headers), counting)
    if exact is not None:
        return JSONBytesResponse({**count.answer_fields, "input_tokens": exact}, headers=limit_headers)
    answer = {**count.answer_fields, "input_tokens": estimate, "estimated": True}
    return JSONBytesResponse(answer, headers=limit_headers)


class _Counting(Attempt[int | None]):
    """The attempt of a count: free, so it counts in no deployment's health; a deployment that cannot give an
    exact count (not the client's protocol, no counting endpoint, rate limited, down, misconfigured: 401/403)
    is passed over; None when none could (the estimate instead). A 400 from the upstream (the request itself
    is wrong) is the client's 400."""

    __slots__ = ("_body", "_canonical", "_codec", "_count", "_forwarded")
    also_next = frozenset((401, 403))

    def __init__(
        self,
        codec: ProtocolCodec,
        count: TokenCount,
        canonical: CanonicalRequest,
        body: dict[str, Any],
        forwarded: dict[str, str],
    ) -> None:
        self._codec = codec
        self._count = count
        self._canonical = canonical
        self._body = body
        self._forwarded = forwarded

    def codec(self, candidate: Candidate) -> ProtocolCodec:
        return self._codec  # only deployments of the client's protocol are sent a count

    async def send(self, pool: UpstreamPool, candidate: Candidate) -> UpstreamReply | Answered[int | None] | None:
        deployment = candidate.deployment
        if deployment.kind == "local":
            exact = await _local_count(pool, deployment, self._canonical)
            return None if exact is None else Answered(exact)
        url = count_tokens_url(deployment)
        if url is None or codec_of(deployment) is not self._codec:
            return None
        headers = {
            **deployment.headers,
            **auth_headers(deployment, pool.api_key(deployment)),
            **self._codec.upstream_headers(self._forwarded),
        }
        tracing.inject(None, headers, self._forwarded)  # the request span's trace context, or the client's
        return await pool.http(deployment, url).send(
            self._count.upstream_body(self._body, deployment.model), headers, stream=False
        )

    async def answered(self, candidate: Candidate, reply: UpstreamReply) -> int | None:
        return self._count.read_count(await reply.read_all())

    def unavailable(self, candidates: list[Candidate], router: DeploymentRouter) -> int | None:
        return None

    def exhausted(self, last_status: int | None, candidates: list[Candidate], router: DeploymentRouter) -> int | None:
        return None


async def _local_count(pool: UpstreamPool, deployment: Deployment, canonical: CanonicalRequest) -> int | None:
    """The embedded model's own count; None (estimate instead) if it cannot give one (not installed, or a
    request it would refuse, such as an image part)."""
    if _LOCAL_COUNTS.locked():
        return None  # every counting slot is busy: the estimate, rather than a queue of CPU work
    async with _LOCAL_COUNTS:
        chat_body = codec_of(deployment).encode_request(canonical, deployment.model)
        try:
            # On the model's worker threads, never on the event loop.
            return await pool.local_model(deployment).count_prompt_tokens(chat_body)
        except ServiceError:
            return None
