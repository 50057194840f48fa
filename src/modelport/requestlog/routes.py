"""`GET /v1/logs`: the caller's team's text request log, newest first.

The query parameters are declared as plain strings (so FastAPI never answers 422 for them) and checked
in `params.parse_log_query`. Each call counts against the team's query RPM (`X-RateLimit-*` headers on
the response; 429 `rate_limit_exceeded` over it). `cost` is USD with 6 decimal places, exact (one
micro-USD, the unit costs are kept in), encoded as a JSON number. `input`/`result` are the retained JSON
payloads, or null.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

import msgspec
from fastapi import APIRouter, Depends, Query
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.auth import AuthContext
from modelport.requestlog.params import parse_log_query
from modelport.requestlog.query import LogRow, find_logs
from modelport.web.deps import get_services, text_auth
from modelport.web.envelope import JSONBytesResponse
from modelport.web.query_limit import enforce_query_limit

COST_PLACES = 6

router = APIRouter(tags=["logs"])

_decoder = msgspec.json.Decoder()


def cost_usd(micros: int) -> Decimal:
    # scaleb keeps the exponent at -6, so the number is written out plainly (0.000123, not 1.23E-4).
    return Decimal(micros).scaleb(-COST_PLACES)


def _payload(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return _decoder.decode(text)
    except msgspec.DecodeError:
        return text  # not written by this service's payload keeping (`payloads.py`): show it as it is


def render_item(row: LogRow) -> dict[str, Any]:
    return {
        "task_id": row.id,
        "key_id": row.key_id,
        "status": row.status,
        "error": row.error,
        "model": {"provider": row.provider, "model_name": row.model_name},
        "prompt_tokens": row.prompt_tokens,
        "completion_tokens": row.completion_tokens,
        "cached_tokens": row.cached_tokens,
        "cache_write_tokens": row.cache_write_tokens,
        "cache_write_1h_tokens": row.cache_write_1h_tokens,
        "price_tier": row.price_tier,
        "previous_response_id": row.previous_response_id,
        "conversation_id": row.conversation_id,
        # A fallback model answered (`model` is the one asked for); null when the requested model served.
        "served_model": row.served_model,
        "cost": cost_usd(row.cost_micros),
        # The response cache: hit | miss | skip (null: off); on a hit the usage is what was served and
        # `cache_saved` what the team did not pay for it.
        "cache": row.cache,
        "cache_saved": None if row.cache_saved_micros is None else cost_usd(row.cache_saved_micros),
        "created_at": row.created_at_ms // 1000,
        "input": _payload(row.input),
        "result": _payload(row.result),
    }


_LOG_PAGE = {
    "type": "object",
    "required": ["requests", "total", "page", "page_size"],
    "properties": {
        "requests": {"type": "array", "items": {"type": "object", "required": ["task_id", "status", "model"]}},
        "total": {"type": "integer"},
        "page": {"type": "integer"},
        "page_size": {"type": "integer"},
    },
}


@router.get(
    "/v1/logs",
    summary="List this key's team's text request logs, newest first",
    responses={200: {"description": "One page of logs", "content": {"application/json": {"schema": _LOG_PAGE}}}},
)
async def list_logs(
    request: Request,
    auth: AuthContext = Depends(text_auth),
    start_time: Annotated[str | None, Query(description="UNIX seconds, required")] = None,
    end_time: Annotated[str | None, Query(description="UNIX seconds, required; > start_time, span <= 30 days")] = None,
    svc_user_id: Annotated[str | None, Query(description="exact X-Svc-User-Id value")] = None,
    page: Annotated[str | None, Query(description="default 1")] = None,
    page_size: Annotated[str | None, Query(description="default 10, at most 100")] = None,
) -> Response:
    # Counted before the parameters are checked: a stream of bad queries spends the quota too.
    headers = await enforce_query_limit(request, auth)
    query = parse_log_query(
        start_time=start_time, end_time=end_time, svc_user_id=svc_user_id, page=page, page_size=page_size
    )
    found = await find_logs(get_services(request).db, auth.team_id, query)
    body = {
        "requests": [render_item(row) for row in found.rows],
        "total": found.total,
        "page": query.page,
        "page_size": query.page_size,
    }
    return JSONBytesResponse(body, headers=headers)
