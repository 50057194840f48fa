"""The Messages `ProtocolCodec`: ties the decode/encode modules of this package together."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelport.core.codec import ProtocolName
from modelport.core.messages import CanonicalRequest
from modelport.core.response import CanonicalResponse
from modelport.core.usage import Usage
from modelport.protocols.anthropic_messages import request_decode, request_encode, response, usage
from modelport.protocols.anthropic_messages.content import PROTOCOL
from modelport.protocols.anthropic_messages.stream_decode import MessagesStreamDecoder
from modelport.protocols.anthropic_messages.stream_encode import MessagesStreamEncoder

# Sent to Anthropic upstreams when the client named no `anthropic-version`.
API_VERSION = "2023-06-01"


class AnthropicMessagesCodec:
    name = ProtocolName(PROTOCOL)
    response_id_prefix = "msg_"
    upstream_path = "/v1/messages"
    forwarded_headers: tuple[str, ...] = ("anthropic-version", "anthropic-beta")
    # Messages requires `max_tokens`.
    requires_output_cap = True

    def is_terminal(self, event: str | None, data: str) -> bool:
        return event in ("message_stop", "error")

    def is_error_event(self, event: str | None, data: str) -> bool:
        return event == "error"

    def carries_output(self, event: str | None, data: str) -> bool:
        # Text, thinking and tool input all arrive as `content_block_delta`.
        if event is not None:
            return event == "content_block_delta"
        return '"content_block_delta"' in data

    def prepare_upstream_body(self, body: dict[str, Any], *, stream: bool, fast: bool) -> bool:
        if not stream and not fast:
            # A translated body may carry the client's own stream option; the fast path sends the client's body
            # as it is (the upstream answers it as it would without the gateway).
            body.pop("stream_options", None)
        return False

    def upstream_headers(self, client_headers: Mapping[str, str]) -> dict[str, str]:
        headers = {"anthropic-version": client_headers.get("anthropic-version", API_VERSION)}
        if "anthropic-beta" in client_headers:
            headers["anthropic-beta"] = client_headers["anthropic-beta"]
        return headers

    def decode_request(self, body: dict[str, Any], headers: Mapping[str, str] | None = None) -> CanonicalRequest:
        beta = headers.get("anthropic-beta") if headers is not None else None
        return request_decode.decode_request(body, system_turns=request_decode.system_turns_allowed(beta))

    def encode_request(self, req: CanonicalRequest, upstream_model: str) -> dict[str, Any]:
        return request_encode.encode_request(req, upstream_model)

    def decode_response(self, body: dict[str, Any]) -> CanonicalResponse:
        return response.decode_response(body)

    def encode_response(
        self, resp: CanonicalResponse, model: str, *, request: CanonicalRequest | None = None
    ) -> dict[str, Any]:
        return response.encode_response(resp, model)

    def stream_decoder(self) -> MessagesStreamDecoder:
        return MessagesStreamDecoder()

    def stream_encoder(
        self, model: str, response_id: str, include_usage: bool, *, request: CanonicalRequest | None = None
    ) -> MessagesStreamEncoder:
        # Messages streams always carry usage (message_start and message_delta); `include_usage` is a
        # Chat Completions option.
        return MessagesStreamEncoder(model, response_id)

    def usage_from_body(self, body: dict[str, Any]) -> Usage | None:
        return usage.usage_from_body(body)

    def usage_sniffer(self) -> usage.MessagesUsageSniffer:
        return usage.MessagesUsageSniffer()

    def error_body(
        self, message: str, type: str, *, code: str | None = None, param: str | None = None, status: int | None = None
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
