"""What each upstream kind speaks: its wire protocol, its endpoint path, and how it authenticates."""

from __future__ import annotations

from modelport.catalog_spec import Deployment, UpstreamKind

KIND_PROTOCOL: dict[UpstreamKind, str] = {
    "openai_chat": "openai_chat",
    "openai_compatible": "openai_chat",
    "openai_responses": "openai_responses",
    "anthropic": "anthropic_messages",
    "local": "openai_chat",
}

# Base URLs follow the official SDKs' conventions: OpenAI's ends in /v1, Anthropic's does not.
PROTOCOL_PATH = {
    "openai_chat": "/chat/completions",
    "openai_responses": "/responses",
    "anthropic_messages": "/v1/messages",
}

DEFAULT_BASE_URL: dict[UpstreamKind, str] = {
    "openai_chat": "https://api.openai.com/v1",
    "openai_responses": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}

ANTHROPIC_DEFAULT_VERSION = "2023-06-01"


def protocol_of(deployment: Deployment) -> str:
    return KIND_PROTOCOL[deployment.kind]


def endpoint_url(deployment: Deployment) -> str:
    base = deployment.base_url or DEFAULT_BASE_URL.get(deployment.kind)
    if not base:
        raise ValueError(f"deployment {deployment.model}: base_url is required for {deployment.kind}")
    return base + PROTOCOL_PATH[protocol_of(deployment)]


def auth_headers(deployment: Deployment, api_key: str | None) -> dict[str, str]:
    if not api_key:
        return {}
    if deployment.kind == "anthropic":
        return {"x-api-key": api_key}
    return {"authorization": f"Bearer {api_key}"}
