"""The Messages `ProtocolCodec`: this package's functions and wire facts as one record."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import orjson

from modelport.core.codec import ClientRoute, ListedModel, ProtocolCodec, TokenCount, UpstreamKindSpec
from modelport.core.messages import CanonicalRequest
from modelport.core.response import CanonicalResponse
from modelport.protocols.anthropic_messages import openapi, request_decode, request_encode, response, usage
from modelport.protocols.anthropic_messages.content import PROTOCOL
from modelport.protocols.anthropic_messages.stream_decode import MessagesStreamDecoder
from modelport.protocols.anthropic_messages.stream_encode import MessagesStreamEncoder
from modelport.protocols.wire_errors import error_event_message, upstream_fault

# Sent to Anthropic upstreams when the client named no `anthropic-version`.
API_VERSION = "2023-06-01"
# What the counting endpoint takes; the rest of a Messages body (max_tokens, stream, metadata, sampling) is
# not part of the count and the endpoint refuses it.
COUNTED_FIELDS = (
    "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers", "context_management",
    "output_config", "output_format",
)  # fmt: skip


def is_terminal(event: str | None, data: str) -> bool:
    return event in ("message_stop", "error")


def is_error_event(event: str | None, data: str) -> bool:
    return event == "error"


def carries_output(event: str | None, data: str) -> bool:
    # Text, thinking and tool input all arrive as `content_block_delta`.
    if event is not None:
        return event == "content_block_delta"
    return '"content_block_delta"' in data


def prepare_upstream_body(body: dict[str, Any], *, stream: bool, fast: bool) -> bool:
    if not stream and not fast:
        # A translated body may carry the client's own stream option; the fast path sends the client's body
        # as it is (the upstream answers it as it would without the gateway).
        body.pop("stream_options", None)
    return False


def upstream_headers(client_headers: Mapping[str, str]) -> dict[str, str]:
    headers = {"anthropic-version": client_headers.get("anthropic-version", API_VERSION)}
    if "anthropic-beta" in client_headers:
        headers["anthropic-beta"] = client_headers["anthropic-beta"]
    return headers


def decode_request(body: dict[str, Any], headers: Mapping[str, str] | None = None) -> CanonicalRequest:
    beta = headers.get("anthropic-beta") if headers is not None else None
    return request_decode.decode_request(body, system_turns=request_decode.system_turns_allowed(beta))


def decode_count_request(body: dict[str, Any], headers: Mapping[str, str]) -> CanonicalRequest:
    """A `count_tokens` body, validated as a Messages request; counting needs no output cap, so a missing
    one is not an error."""
    return decode_request({**body, "max_tokens": 1} if "max_tokens" not in body else body, headers)


def count_body(body: dict[str, Any], upstream_model: str) -> dict[str, Any]:
    """What an upstream's counting endpoint is sent for a client's `count_tokens` body."""
    payload = {k: body[k] for k in COUNTED_FIELDS if k in body}
    payload["model"] = upstream_model
    return payload


def read_count(raw: bytes) -> int | None:
    try:
        counted = orjson.loads(raw).get("input_tokens")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return counted if isinstance(counted, int) and counted >= 0 else None


def _encode_response(resp: CanonicalResponse, model: str, *, request: CanonicalRequest | None = None) -> dict[str, Any]:
    return response.encode_response(resp, model)


def _stream_encoder(
    model: str, response_id: str, include_usage: bool, *, request: CanonicalRequest | None = None
) -> MessagesStreamEncoder:
    # Messages streams always carry usage (message_start and message_delta); `include_usage` is a
    # Chat Completions option.
    return MessagesStreamEncoder(model, response_id)


def error_body(
    message: str, type: str, *, code: str | None = None, param: str | None = None, status: int | None = None
) -> dict[str, Any]:
    """Anthropic's envelope ``{"type": "error", "error": {type, message}}`` (what Anthropic SDKs and Claude
    Code parse) with the interface's `error.type` (docs/api/errors.md: one table for the three endpoints;
    the SDKs pick their exception class from the HTTP status). ``code`` and ``param`` ride inside
    ``error`` (the SDKs ignore unknown keys)."""
    error: dict[str, Any] = {"type": type, "message": message}
    if code is not None:
        error["code"] = code
    if param is not None:
        error["param"] = param
    return {"type": "error", "error": error}


def model_fields(model: ListedModel) -> dict[str, Any]:
    """An entry of Anthropic's Models API, with its names for the context limits."""
    return {
        "id": model.id,
        "type": "model",
        "display_name": model.display_name or model.id,
        "created_at": datetime.fromtimestamp(model.created_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "lifecycle": "active",
        "max_input_tokens": model.context_window,
        "max_tokens": model.max_output_tokens,
    }


def model_list_fields(data: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "data": data,
        "has_more": False,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }


def _auth(api_key: str) -> dict[str, str]:
    return {"x-api-key": api_key}


# Anthropic's largest output cap is 64,000 (Claude Sonnet 4.x, Haiku 4.5). Its base URL has no /v1 (the
# official SDK's convention; `upstream_path` carries it).
UPSTREAM_KINDS = {
    "anthropic": UpstreamKindSpec(
        "max_tokens",
        64_000,
        "https://api.anthropic.com",
        _auth,
        count_tokens_path="/v1/messages/count_tokens",
        models_path="/v1/models",
    ),
}

CODEC = ProtocolCodec(
    name=PROTOCOL,
    route=ClientRoute(
        "/v1/messages", "messages", "messages", "Anthropic Messages (also with ?beta=true)", "Messages"
    ),
    response_id_prefix="msg_",
    upstream_path="/v1/messages",
    upstream_kinds=UPSTREAM_KINDS,
    forwarded_headers=("anthropic-version", "anthropic-beta"),
    # Messages requires `max_tokens`.
    output_cap_fields=("max_tokens",),
    requires_output_cap=True,
    is_terminal=is_terminal,
    is_error_event=is_error_event,
    carries_output=carries_output,
    error_event_message=error_event_message,
    prepare_upstream_body=prepare_upstream_body,
    upstream_headers=upstream_headers,
    upstream_fault=upstream_fault,
    decode_request=decode_request,
    encode_request=request_encode.encode_request,
    decode_response=response.decode_response,
    encode_response=_encode_response,
    stream_decoder=MessagesStreamDecoder,
    stream_encoder=_stream_encoder,
    usage_from_body=usage.usage_from_body,
    usage_sniffer=usage.MessagesUsageSniffer,
    error_body=error_body,
    request_schema=openapi.REQUEST,
    response_schema=openapi.RESPONSE,
    token_count=TokenCount(
        "/v1/messages/count_tokens", "Count the input tokens of a Messages request",
        decode_count_request, count_body, read_count,
    ),
    key_header="x-api-key",
    model_fields=model_fields,
    model_list_fields=model_list_fields,
)  # fmt: skip
