"""What each upstream kind speaks: its wire protocol, its endpoint path, and how it authenticates."""

from __future__ import annotations

from modelport.catalog_spec import Deployment, TextModel, UpstreamKind
from modelport.core.codec import ProtocolName
from modelport.protocols import get_codec

KIND_PROTOCOL: dict[UpstreamKind, ProtocolName] = {
    "openai_chat": ProtocolName.OPENAI_CHAT,
    "openai_compatible": ProtocolName.OPENAI_CHAT,
    "openai_responses": ProtocolName.OPENAI_RESPONSES,
    "anthropic": ProtocolName.ANTHROPIC_MESSAGES,
    "local": ProtocolName.OPENAI_CHAT,
}

# The request field that caps the answer's length, per kind (fast path: added only when the team's credit
# cannot cover the model's maximum output and the client set no cap of its own; docs/api/text-gateway.md, Billing).
# OpenAI's Chat takes `max_completion_tokens` (reasoning models refuse `max_tokens`); OpenAI-compatible
# servers (vLLM, Ollama, llama.cpp) and the embedded model all know `max_tokens`.
OUTPUT_CAP_FIELD: dict[UpstreamKind, str] = {
    "openai_chat": "max_completion_tokens",
    "openai_compatible": "max_tokens",
    "openai_responses": "max_output_tokens",
    "anthropic": "max_tokens",
    "local": "max_tokens",
}

# A model's maximum output when its catalog entry has no `max_output_tokens`: large enough for the reasoning
# models of each kind (reasoning tokens count as output), since the balance hold and the credit check assume
# it (docs/api/text-gateway.md, Billing). OpenAI's largest caps are 128,000 (GPT-5 family; o3/o4-mini
# 100,000), Anthropic's 64,000 (Claude Sonnet 4.x, Haiku 4.5); OpenAI-compatible servers are bounded by their
# context, the embedded model by its 2,048-token context.
DEFAULT_MAX_OUTPUT_TOKENS: dict[UpstreamKind, int] = {
    "openai_chat": 128_000,
    "openai_responses": 128_000,
    "anthropic": 64_000,
    "openai_compatible": 32_768,
    "local": 2_048,
}


def deployment_max_output(model: TextModel, deployment: Deployment) -> int:
    """The most output `deployment` may produce for `model`: the catalog's figure, else its kind's default."""
    return model.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS[deployment.kind]


def model_max_output(model: TextModel) -> int:
    """The most output any deployment of `model` may produce (what the balance hold assumes uncapped)."""
    return model.max_output_tokens or max(DEFAULT_MAX_OUTPUT_TOKENS[d.kind] for d in model.deployments)


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
