"""The Messages `ProtocolCodec`: ties the decode/encode modules of this package together."""

from __future__ import annotations

from typing import Any

from modelport.core.messages import CanonicalRequest
from modelport.core.response import CanonicalResponse
from modelport.core.usage import Usage
from modelport.protocols.anthropic_messages import request_decode, request_encode, response, usage
from modelport.protocols.anthropic_messages.content import PROTOCOL
from modelport.protocols.anthropic_messages.stream_decode import MessagesStreamDecoder
from modelport.protocols.anthropic_messages.stream_encode import MessagesStreamEncoder


class AnthropicMessagesCodec:
    name = PROTOCOL

    def decode_request(self, body: dict[str, Any]) -> CanonicalRequest:
        return request_decode.decode_request(body)

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
        self, message: str, type: str, *, code: str | None = None, param: str | None = None
    ) -> dict[str, Any]:
        """Anthropic's ``{"type": "error", "error": {type, message}}``; the interface's optional ``code``
        and ``param`` ride inside ``error`` (the SDKs ignore unknown keys)."""
        error: dict[str, Any] = {"type": type, "message": message}
        if code is not None:
            error["code"] = code
        if param is not None:
            error["param"] = param
        return {"type": "error", "error": error}
