"""`GET /v1/models` and `GET /v1/models/{model_id}`: the text models the caller's team may use.

The body serves every protocol's official SDK at once: each protocol package gives the fields its SDK
reads (`ProtocolCodec.model_fields`, `model_list_fields`; OpenAI's `{object: list, data: [{id, object:
model, created, owned_by}]}`, Anthropic's `{data: [{id, type: model, display_name, created_at}], has_more,
first_id, last_id}`), with the limits clients size their context with (null when the catalog does not say).
A model served only by the embedded runtime is left out while llama-cpp-python is not installed (a first
start builds it in the background) and listed as soon as it is.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.auth import AuthContext
from modelport.catalog_spec import TextModel
from modelport.errors import NotFound
from modelport.gateway.openapi_docs import MODEL_LIST, MODEL_OBJECT
from modelport.protocols import model_entry, model_list
from modelport.upstreams.local_runtime import LOCAL_RUNTIME
from modelport.web.deps import get_services, text_auth
from modelport.web.envelope import JSONBytesResponse
from modelport.web.query_limit import enforce_query_limit

router = APIRouter(tags=["models"])


def team_may_use(model: TextModel, auth: AuthContext) -> bool:
    """The model is active, open to the key's team, and within the key's own model patterns."""
    return (
        model.active
        and (not model.teams or auth.team_id in model.teams or auth.team_name in model.teams)
        and auth.may_use(model.id)
    )


def can_answer(model: TextModel) -> bool:
    """False for a model served only by the embedded runtime while that is not installed (being built)."""
    return any(d.kind != "local" for d in model.deployments) or LOCAL_RUNTIME.available()


@router.get(
    "/v1/models",
    summary="List the text models this key's team may use",
    responses={200: {"description": "The models", "content": {"application/json": {"schema": MODEL_LIST}}}},
)
async def list_models(request: Request, auth: AuthContext = Depends(text_auth)) -> Response:
    headers = await enforce_query_limit(request, auth)
    snapshot = await get_services(request).catalog.get()
    seen: set[str] = set()
    data: list[dict[str, object]] = []
    for model in snapshot.text.values():
        if model.id not in seen and team_may_use(model, auth) and can_answer(model):
            seen.add(model.id)
            data.append(model_entry(model))
    return JSONBytesResponse(model_list(data), headers=headers)


@router.get(
    "/v1/models/{model_id:path}",
    summary="One text model this key's team may use (ids contain a slash: `provider/name`)",
    responses={
        200: {"description": "The model", "content": {"application/json": {"schema": MODEL_OBJECT}}},
        404: {"description": "Unknown model, or not available to this key"},
    },
)
async def get_model(model_id: str, request: Request, auth: AuthContext = Depends(text_auth)) -> Response:
    headers = await enforce_query_limit(request, auth)
    snapshot = await get_services(request).catalog.get()
    model = snapshot.text.get(model_id)
    if model is None or not team_may_use(model, auth) or not can_answer(model):
        raise NotFound(
            f"The model '{model_id}' does not exist or is not available to this key",
            code="model_not_found",
            param="model",
        )
    return JSONBytesResponse(model_entry(model), headers=headers)
