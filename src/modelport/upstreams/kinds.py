"""What each upstream kind speaks: its wire protocol, its endpoint path, and how it authenticates."""

from __future__ import annotations

from modelport.catalog_spec import Deployment, UpstreamKind
from modelport.core.codec import ProtocolName
from modelport.protocols import get_codec

KIND_PROTOCOL: dict[UpstreamKind, ProtocolName] = {
    "openai_chat": ProtocolName.OPENAI_CHAT,
    "openai_compatible": ProtocolName.OPENAI_CHAT,
    "openai_responses": ProtocolName.OPENAI_RESPONSES,
    "anthropic": ProtocolName.ANTHROPIC_MESSAGES,
    "local": ProtocolName.OPENAI_CHAT,
}

# The request field that caps the answer's length, per kind (fast path: added when the client sent none).
# OpenAI's Chat takes `max_completion_tokens` (reasoning models refuse `max_tokens`); OpenAI-compatible
# servers (vLLM, Ollama, llama.cpp) and the embedded model all know `max_tokens`.
OUTPUT_CAP_FIELD: dict[UpstreamKind, str] = {
    "openai_chat": "max_completion_tokens",
    "openai_compatible": "max_tokens",
    "openai_responses": "max_output_tokens",
    "anthropic": "max_tokens",
    "local": "max_tokens",
}

# Base URLs follow the official SDKs' conventions: OpenAI's ends in /v1, Anthropic's does not (the codec's
# `upstream_path` carries the rest).

DEFAULT_BASE_URL: dict[UpstreamKind, str] = {
    "openai_chat": "https://api.openai.com/v1",
    "openai_responses": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}


def protocol_of(deployment: Deployment) -> ProtocolName:
    return KIND_PROTOCOL[deployment.kind]


def endpoint_url(deployment: Deployment) -> str:
    base = deployment.base_url or DEFAULT_BASE_URL.get(deployment.kind)
    if not base:
        raise ValueError(f"deployment {deployment.model}: base_url is required for {deployment.kind}")
    return base + get_codec(protocol_of(deployment)).upstream_path


def count_tokens_url(deployment: Deployment) -> str | None:
    """Anthropic's token counting endpoint for an `anthropic` deployment; None for other kinds."""
    if deployment.kind != "anthropic":
        return None
    base = deployment.base_url or DEFAULT_BASE_URL["anthropic"]
    return base + "/v1/messages/count_tokens"


def auth_headers(deployment: Deployment, api_key: str | None) -> dict[str, str]:
    if not api_key:
        return {}
    if deployment.kind == "anthropic":
        return {"x-api-key": api_key}
    return {"authorization": f"Bearer {api_key}"}
