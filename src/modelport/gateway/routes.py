"""The three protocol endpoints of the text gateway. Routes only: the work is in `pipeline`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from modelport.gateway.pipeline import TextGateway

router = APIRouter(tags=["text"])

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"description": desc}
    for code, desc in {
        400: "Invalid parameters",
        401: "Missing or invalid key",
        402: "Insufficient balance",
        404: "Unknown model",
        429: "Rate limit, request limit or model temporarily unavailable",
        502: "Upstream error",
    }.items()
}


def _body_doc(ref: str) -> dict[str, Any]:
    return {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {"type": "object", "description": f"A {ref} request body of the published protocol."}
                }
            },
        }
    }


def _gateway(request: Request) -> TextGateway:
    gateway: TextGateway = request.app.state.gateway
    return gateway


@router.post(
    "/v1/chat/completions",
    summary="OpenAI Chat Completions",
    responses=_ERRORS,
    openapi_extra=_body_doc("Chat Completions"),
)
async def chat_completions(request: Request) -> Response:
    return await _gateway(request).handle(request, "chat.completions", "openai_chat")


@router.post("/v1/responses", summary="OpenAI Responses", responses=_ERRORS, openapi_extra=_body_doc("Responses"))
async def responses(request: Request) -> Response:
    return await _gateway(request).handle(request, "responses", "openai_responses")


@router.post(
    "/v1/messages",
    summary="Anthropic Messages (also with ?beta=true)",
    responses=_ERRORS,
    openapi_extra=_body_doc("Messages"),
)
async def messages(request: Request) -> Response:
    return await _gateway(request).handle(request, "messages", "anthropic_messages")
