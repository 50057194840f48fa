"""The Responses `ProtocolCodec`: ties the decode/encode modules of this package together.

Beyond the `ProtocolCodec` interface, `encode_response` and `stream_encoder` accept the client's
`CanonicalRequest` (keyword `request`) so the Response echoes its settings (``instructions``, ``tools``,
``temperature``, ...) as the real API does; without it the API's defaults are shown.
"""

from __future__ import annotations

from typing import Any

from modelport.core.messages import CanonicalRequest
from modelport.core.response import CanonicalResponse
from modelport.core.usage import Usage
from modelport.protocols.openai_responses import request_decode, request_encode, response, usage
from modelport.protocols.openai_responses.stream_decode import ResponsesStreamDecoder
from modelport.protocols.openai_responses.stream_encode import ResponsesStreamEncoder


class OpenAIResponsesCodec:
    name = "openai_responses"

    def decode_request(self, body: dict[str, Any]) -> CanonicalRequest:
        return request_decode.decode_request(body)

    def encode_request(self, req: CanonicalRequest, upstream_model: str) -> dict[str, Any]:
        return request_encode.encode_request(req, upstream_model)

    def decode_response(self, body: dict[str, Any]) -> CanonicalResponse:
        return response.decode_response(body)

    def encode_response(
        self, resp: CanonicalResponse, model: str, *, request: CanonicalRequest | None = None
    ) -> dict[str, Any]:
        return response.encode_response(resp, model, request)

    def stream_decoder(self) -> ResponsesStreamDecoder:
        return ResponsesStreamDecoder()

    def stream_encoder(
        self, model: str, response_id: str, include_usage: bool, *, request: CanonicalRequest | None = None
    ) -> ResponsesStreamEncoder:
        return ResponsesStreamEncoder(model, response_id, include_usage, request)

    def usage_from_body(self, body: dict[str, Any]) -> Usage | None:
        return usage.usage_from_body(body)

    def usage_sniffer(self) -> usage.ResponsesUsageSniffer:
        return usage.ResponsesUsageSniffer()

    def error_body(
        self, message: str, type: str, *, code: str | None = None, param: str | None = None
    ) -> dict[str, Any]:
        return {"error": {"message": message, "type": type, "param": param, "code": code}}
