"""The Chat Completions `ProtocolCodec`: this package's functions and wire facts as one record."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from modelport.core.codec import ClientRoute, ProtocolCodec, UpstreamKindSpec
from modelport.core.messages import CanonicalRequest
from modelport.core.response import CanonicalResponse
from modelport.protocols.openai_chat import openapi, request_decode, request_encode, response, usage
from modelport.protocols.openai_chat.stream_decode import ChatStreamDecoder
from modelport.protocols.openai_chat.stream_encode import ChatStreamEncoder
from modelport.protocols.openai_common import model_fields, model_list_fields, openai_error_body
from modelport.protocols.wire_errors import error_event_message, upstream_fault

# Delta fields that carry output (the first chunk usually has only an empty `content` and the role).
_OUTPUT_FIELDS = ("content", "tool_calls", "reasoning_content", "reasoning", "refusal", "function_call")


def is_terminal(event: str | None, data: str) -> bool:
    return data.strip() == "[DONE]"


def is_error_event(event: str | None, data: str) -> bool:
    return data.startswith('{"error"')


def carries_output(event: str | None, data: str) -> bool:
    if '"choices"' not in data:
        return False
    try:
        chunk = orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    for choice in choices if isinstance(choices, list) else ():
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if isinstance(delta, dict) and any(delta.get(k) for k in _OUTPUT_FIELDS):
            return True
    return False


def is_usage_only(data: str) -> bool:
    """The final chunk `stream_options.include_usage` adds: no choices, only usage."""
    if '"usage"' not in data or '"choices"' not in data:
        return False
    try:
        chunk = orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return isinstance(chunk, dict) and chunk.get("choices") == [] and chunk.get("usage") is not None


def prepare_upstream_body(body: dict[str, Any], *, stream: bool, fast: bool) -> bool:
    if not stream:
        if not fast:
            # A translated body may carry the client's own stream option; the fast path sends the client's
            # body as it is (the upstream answers it as it would without the gateway).
            body.pop("stream_options", None)
        return False
    # Always ask for usage so the stream can be billed; hide it if the client did not ask.
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage") is True:
        return False  # asked already: the body stays the client's
    options = dict(options or {})
    strip_usage = fast and not options.get("include_usage")
    options["include_usage"] = True
    body["stream_options"] = options
    return strip_usage


def _no_headers(client_headers: Mapping[str, str]) -> dict[str, str]:
    return {}


def _decode_request(body: dict[str, Any], headers: Mapping[str, str] | None = None) -> CanonicalRequest:
    return request_decode.decode_request(body)


def _encode_response(resp: CanonicalResponse, model: str, *, request: CanonicalRequest | None = None) -> dict[str, Any]:
    return response.encode_response(resp, model)


def _stream_encoder(
    model: str, response_id: str, include_usage: bool, *, request: CanonicalRequest | None = None
) -> ChatStreamEncoder:
    return ChatStreamEncoder(model, response_id, include_usage)


# OpenAI's Chat takes `max_completion_tokens` (reasoning models refuse `max_tokens`); OpenAI-compatible
# servers (vLLM, Ollama, llama.cpp) and the embedded model (`upstreams/local_model.py`, which speaks Chat
# Completions) know `max_tokens`. Default maximum outputs: OpenAI's largest cap is 128,000 (GPT-5 family);
# compatible servers are bounded by their context, the embedded model by its 2,048-token context.
UPSTREAM_KINDS = {
    "openai_chat": UpstreamKindSpec("max_completion_tokens", 128_000, "https://api.openai.com/v1"),
    "openai_compatible": UpstreamKindSpec("max_tokens", 32_768),
    "local": UpstreamKindSpec("max_tokens", 2_048),
}

CODEC = ProtocolCodec(
    name=response.PROTOCOL,
    route=ClientRoute(
        "/v1/chat/completions", "chat.completions", "chat_completions", "OpenAI Chat Completions", "Chat Completions"
    ),
    response_id_prefix="chatcmpl-",
    upstream_path="/chat/completions",
    upstream_kinds=UPSTREAM_KINDS,
    forwarded_headers=(),
    output_cap_fields=("max_tokens", "max_completion_tokens"),
    requires_output_cap=False,
    is_terminal=is_terminal,
    is_error_event=is_error_event,
    carries_output=carries_output,
    error_event_message=error_event_message,
    prepare_upstream_body=prepare_upstream_body,
    upstream_headers=_no_headers,
    upstream_fault=upstream_fault,
    decode_request=_decode_request,
    encode_request=request_encode.encode_request,
    decode_response=response.decode_response,
    encode_response=_encode_response,
    stream_decoder=ChatStreamDecoder,
    stream_encoder=_stream_encoder,
    usage_from_body=usage.usage_from_body,
    usage_sniffer=usage.ChatUsageSniffer,
    error_body=openai_error_body,
    request_schema=openapi.REQUEST,
    # How the answer streams (usage chunk or not) does not change it.
    cache_neutral=frozenset({"stream_options"}),
    response_schema=openapi.RESPONSE,
    is_usage_only=is_usage_only,
    model_fields=model_fields,
    model_list_fields=model_list_fields,
)
