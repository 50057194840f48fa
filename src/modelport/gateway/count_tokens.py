"""`POST /v1/messages/count_tokens`: how many input tokens a Messages request would use.

Exact when the model has an `anthropic` deployment: the request goes to that upstream's own counting
endpoint (the deployments in routing order; one that is rate limited, failing or without the endpoint is
skipped). Exact for the embedded local model too: the request, translated to Chat Completions as a call
would be, goes through the model's own chat template and tokenizer (llama.cpp; nothing is generated).
Otherwise, or when no such upstream answers, the gateway's estimate (the one it holds credit
with: characters / 4, a fixed amount per media part, + 16); the answer says which with `estimated`.
A query: counted against the query rate limit, not billed, no request-log row.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport import tracing
from modelport.accounts.auth import AuthContext
from modelport.billing.pricing import estimate_input_tokens
from modelport.catalog_spec import Deployment
from modelport.core.messages import CanonicalRequest
from modelport.errors import ServiceError
from modelport.gateway.headers import session_id
from modelport.gateway.openapi_docs import REQUEST_BODIES, TOKEN_COUNT
from modelport.gateway.pipeline import FORWARDED_HEADERS, TEXT_GATEWAY, TextGateway, read_json_body
from modelport.gateway.upstream_errors import client_error_for, is_deployment_fault, is_retryable
from modelport.protocols import get_codec
from modelport.protocols.anthropic_messages import CODEC as MESSAGES
from modelport.upstreams.kinds import auth_headers, count_tokens_url, protocol_of
from modelport.upstreams.transport import UpstreamUnreachable
from modelport.web.deps import get_services, text_auth
from modelport.web.envelope import JSONBytesResponse
from modelport.web.query_limit import enforce_query_limit

router = APIRouter(tags=["text"])

# What Anthropic's counting endpoint takes; the rest of a Messages body (max_tokens, stream, metadata,
# sampling) is not part of the count and the endpoint refuses it.
COUNTED_FIELDS = (
    "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers", "context_management",
    "output_config", "output_format",
)  # fmt: skip


@router.post(
    "/v1/messages/count_tokens",
    summary="Count the input tokens of a Messages request",
    responses={
        200: {"description": "The count", "content": {"application/json": {"schema": TOKEN_COUNT}}},
        400: {"description": "Invalid request"},
        404: {"description": "Unknown model"},
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {**REQUEST_BODIES["/v1/messages"], "required": ["model", "messages"]}}
            },
        }
    },
)
async def count_tokens(request: Request, auth: AuthContext = Depends(text_auth)) -> Response:
    limit_headers = await enforce_query_limit(request, auth)
    body = await read_json_body(request)
    # Validated as a Messages request; counting needs no output cap, so a missing one is not an error.
    canonical = MESSAGES.decode_request(
        {**body, "max_tokens": 1} if "max_tokens" not in body else body, request.headers
    )
    gateway = get_services(request)[TEXT_GATEWAY]
    model = await gateway.resolve_model(canonical.model, auth)
    forwarded = {h: request.headers[h] for h in FORWARDED_HEADERS if h in request.headers}
    for candidate in gateway.caller.router.plan(model, session_id(request.headers)):
        if gateway.caller.router.is_cooling(candidate):
            continue
        if candidate.deployment.kind == "local":
            exact = await _local_count(gateway, candidate.deployment, canonical)
        else:
            exact = await _upstream_count(gateway, candidate.deployment, body, forwarded)
        if exact is not None:
            return JSONBytesResponse({"input_tokens": exact}, headers=limit_headers)
    estimate = estimate_input_tokens(canonical)
    return JSONBytesResponse({"input_tokens": estimate, "estimated": True}, headers=limit_headers)


async def _local_count(gateway: TextGateway, deployment: Deployment, canonical: CanonicalRequest) -> int | None:
    """The embedded model's own count; None (estimate instead) if it cannot give one (not installed, or a
    request it would refuse, such as an image part)."""
    chat_body = get_codec(protocol_of(deployment)).encode_request(canonical, deployment.model)
    try:
        return await gateway.caller.pool.local_model(deployment).count_prompt_tokens(chat_body)
    except ServiceError:
        return None


async def _upstream_count(
    gateway: TextGateway, deployment: Deployment, body: dict[str, Any], forwarded: dict[str, str]
) -> int | None:
    """The upstream's exact count, None if this deployment cannot give one. A 400 from the upstream (the
    request itself is wrong) is the client's 400."""
    url = count_tokens_url(deployment)
    if url is None:
        return None
    pool = gateway.caller.pool
    payload = {k: body[k] for k in COUNTED_FIELDS if k in body}
    payload["model"] = deployment.model
    headers = {
        **deployment.headers,
        **auth_headers(deployment, pool.api_key(deployment)),
        **MESSAGES.upstream_headers(forwarded),
    }
    tracing.inject(None, headers, forwarded)  # the request span's trace context, or the client's as it came
    try:
        reply = await pool.http(deployment, url).send(payload, headers, stream=False)
    except UpstreamUnreachable:
        return None
    raw = await reply.read_all()
    if reply.status == 200:
        try:
            counted = orjson.loads(raw).get("input_tokens")
        except (orjson.JSONDecodeError, AttributeError):
            return None
        return counted if isinstance(counted, int) and counted >= 0 else None
    if is_retryable(reply.status) or is_deployment_fault(reply.status, raw) or reply.status in (401, 403):
        return None  # rate limited, down, misconfigured or without the endpoint: estimate instead
    raise client_error_for(reply.status, raw)
