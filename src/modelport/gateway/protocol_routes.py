"""The one table of the gateway's protocol endpoints: the ASGI dispatch serves them and `routes.py` declares
them for the OpenAPI document, both from this table. A new protocol is one row here and one codec."""

from __future__ import annotations

from dataclasses import dataclass

from modelport.core.codec import ProtocolName


@dataclass(frozen=True, slots=True)
class ProtocolRoute:
    path: str
    endpoint: str  # the request log's `endpoint`
    protocol: ProtocolName
    name: str  # the OpenAPI operation's name
    summary: str
    body_ref: str  # what the request body is, in the OpenAPI document


PROTOCOL_ROUTES = (
    ProtocolRoute(
        "/v1/chat/completions", "chat.completions", ProtocolName.OPENAI_CHAT,
        "chat_completions", "OpenAI Chat Completions", "Chat Completions",
    ),
    ProtocolRoute(
        "/v1/responses", "responses", ProtocolName.OPENAI_RESPONSES, "responses", "OpenAI Responses", "Responses"
    ),
    ProtocolRoute(
        "/v1/messages", "messages", ProtocolName.ANTHROPIC_MESSAGES,
        "messages", "Anthropic Messages (also with ?beta=true)", "Messages",
    ),
)  # fmt: skip
BY_PATH = {route.path: route for route in PROTOCOL_ROUTES}
