"""`GET /v1/models`: the text models the caller's team may use.

The body serves both official SDKs: OpenAI's `{object: list, data: [{id, object: model, created,
owned_by}]}` and Anthropic's `{data: [{id, type: model, display_name, created_at}], has_more, first_id,
last_id}` at once.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.auth import AuthContext
from modelport.apps.deps import get_runtime, text_auth
from modelport.apps.envelope import JSONBytesResponse
from modelport.catalog_spec import TextModel
from modelport.gateway.query_limit import enforce_query_limit

router = APIRouter(tags=["models"])


def team_may_use(model: TextModel, auth: AuthContext) -> bool:
    return model.active and (not model.teams or auth.team_id in model.teams or auth.team_name in model.teams)


def model_entry(model: TextModel) -> dict[str, Any]:
    created_at = datetime.fromtimestamp(model.created_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "id": model.id,
        "object": "model",
        "created": model.created_at,
        "owned_by": model.provider,
        "type": "model",
        "display_name": model.display_name or model.id,
        "created_at": created_at,
    }


@router.get("/v1/models", summary="List the text models this key's team may use")
async def list_models(request: Request, auth: AuthContext = Depends(text_auth)) -> Response:
    headers = await enforce_query_limit(request, auth)
    snapshot = await get_runtime(request).catalog.get()
    seen: set[str] = set()
    data = []
    for model in snapshot.text.values():
        if model.id not in seen and team_may_use(model, auth):
            seen.add(model.id)
            data.append(model_entry(model))
    body = {
        "object": "list",
        "data": data,
        "has_more": False,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }
    return JSONBytesResponse(body, headers=headers)
