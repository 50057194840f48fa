"""The Responses `ProtocolCodec`: this package's functions and wire facts as one record.

`encode_response` and `stream_encoder` use the client's `CanonicalRequest` (keyword `request`) so the
Response echoes its settings (``instructions``, ``tools``, ``temperature``, ...) as the real API does;
without it the API's defaults are shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from modelport.core.codec import ClientRoute, ProtocolCodec, TokenCount, UpstreamKindSpec
from modelport.core.messages import CanonicalRequest
from modelport.core.response import CanonicalResponse
from modelport.protocols.openai_common import model_fields, model_list_fields, openai_error_body
from modelport.protocols.openai_responses import (
    openapi,
    request_decode,
    request_encode,
    response,
    stored,
    usage,
)
from modelport.protocols.openai_responses.stream_decode import ResponsesStreamDecoder
from modelport.protocols.openai_responses.stream_encode import ResponsesStreamEncoder
from modelport.protocols.wire_errors import error_event_message, upstream_fault

_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed", "error"})


def is_terminal(event: str | None, data: str) -> bool:
    kind = event
    if kind is None and '"type"' in data:
        try:
            kind = orjson.loads(data).get("type")
        except orjson.JSONDecodeError:
            kind = None
    return kind in _TERMINAL


def is_error_event(event: str | None, data: str) -> bool:
    return event in ("error", "response.failed")


def carries_output(event: str | None, data: str) -> bool:
    # Output arrives as `response.<part>.delta` events (text, reasoning, refusal, tool arguments).
    if event is not None:
        return event.endswith(".delta")
    return '.delta"' in data


def prepare_upstream_body(body: dict[str, Any], *, stream: bool, fast: bool) -> bool:
    if not stream and not fast:
        # A translated body may carry the client's own stream option; the fast path sends the client's body
        # as it is (the upstream answers it as it would without the gateway).
        body.pop("stream_options", None)
    return False


def _no_headers(client_headers: Mapping[str, str]) -> dict[str, str]:
    return {}


def _decode_request(body: dict[str, Any], headers: Mapping[str, str] | None = None) -> CanonicalRequest:
    return request_decode.decode_request(body)


def _decode_count_request(body: dict[str, Any], headers: Mapping[str, str]) -> CanonicalRequest:
    """An `input_tokens` body, validated as a Responses request (the gateway has put the items of its
    `previous_response_id` or `conversation` before its input already)."""
    return request_decode.decode_request({**body, "input": body.get("input", [])})


def _count_body(body: dict[str, Any], upstream_model: str) -> dict[str, Any]:
    return {**{k: v for k, v in body.items() if k not in ("stream", "store", "background")}, "model": upstream_model}


def _read_count(raw: bytes) -> int | None:
    try:
        counted = orjson.loads(raw).get("input_tokens")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return counted if isinstance(counted, int) and counted >= 0 else None


def _encode_response(resp: CanonicalResponse, model: str, *, request: CanonicalRequest | None = None) -> dict[str, Any]:
    return response.encode_response(resp, model, request)


def _stream_encoder(
    model: str, response_id: str, include_usage: bool, *, request: CanonicalRequest | None = None
) -> ResponsesStreamEncoder:
    return ResponsesStreamEncoder(model, response_id, include_usage, request)


# OpenAI's largest output caps are 128,000 (GPT-5 family; o3/o4-mini 100,000); reasoning tokens count.
UPSTREAM_KINDS = {
    "openai_responses": UpstreamKindSpec("max_output_tokens", 128_000, "https://api.openai.com/v1"),
}

CODEC = ProtocolCodec(
    name=request_decode.PROTOCOL,
    route=ClientRoute("/v1/responses", "responses", "responses", "OpenAI Responses", "Responses"),
    response_id_prefix="resp_",
    upstream_path="/responses",
    upstream_kinds=UPSTREAM_KINDS,
    forwarded_headers=(),
    output_cap_fields=("max_output_tokens",),
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
    stream_decoder=ResponsesStreamDecoder,
    stream_encoder=_stream_encoder,
    usage_from_body=usage.usage_from_body,
    usage_sniffer=usage.ResponsesUsageSniffer,
    error_body=openai_error_body,
    request_schema=openapi.REQUEST,
    response_schema=openapi.RESPONSE,
    model_fields=model_fields,
    model_list_fields=model_list_fields,
    token_count=TokenCount(
        "/v1/responses/input_tokens",
        "Count the input tokens of a Responses request",
        _decode_count_request,
        _count_body,
        _read_count,
        required_fields=("model",),
        answer_fields={"object": "response.input_tokens"},
    ),
    server_state=stored.SERVER_STATE,
    # Whether the answer is kept, how it streams, and whether `stream: false` was written out.
    cache_neutral=frozenset({"store", "stream_options", "_stream_false"}),
)
