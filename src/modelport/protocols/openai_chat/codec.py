"""The Chat Completions `ProtocolCodec`: ties the decode/encode modules of this package together."""

from __future__ import annotations

from typing import Any

from modelport.core.messages import CanonicalRequest
from modelport.core.response import CanonicalResponse
from modelport.core.usage import Usage
from modelport.protocols.openai_chat import request_decode, request_encode, response, usage
from modelport.protocols.openai_chat.stream_decode import ChatStreamDecoder
from modelport.protocols.openai_chat.stream_encode import ChatStreamEncoder


class OpenAIChatCodec:
    name = "openai_chat"

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

    def stream_decoder(self) -> ChatStreamDecoder:
        return ChatStreamDecoder()

    def stream_encoder(
        self, model: str, response_id: str, include_usage: bool, *, request: CanonicalRequest | None = None
    ) -> ChatStreamEncoder:
        return ChatStreamEncoder(model, response_id, include_usage)

    def usage_from_body(self, body: dict[str, Any]) -> Usage | None:
        return usage.usage_from_body(body)

    def usage_sniffer(self) -> usage.ChatUsageSniffer:
        return usage.ChatUsageSniffer()

    def error_body(
        self, message: str, type: str, *, code: str | None = None, param: str | None = None
    ) -> dict[str, Any]:
        return {"error": {"message": message, "type": type, "param": param, "code": code}}
