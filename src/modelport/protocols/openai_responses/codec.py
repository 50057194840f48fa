"""The Responses `ProtocolCodec`: ties the decode/encode modules of this package together.

Beyond the `ProtocolCodec` interface, `encode_response` and `stream_encoder` accept the client's
`CanonicalRequest` (keyword `request`) so the Response echoes its settings (``instructions``, ``tools``,
``temperature``, ...) as the real API does; without it the API's defaults are shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from modelport.core.codec import ProtocolName, openai_error_body
from modelport.core.messages import CanonicalRequest
from modelport.core.response import CanonicalResponse
from modelport.core.usage import Usage
from modelport.protocols.openai_responses import request_decode, request_encode, response, usage
from modelport.protocols.openai_responses.stream_decode import ResponsesStreamDecoder
from modelport.protocols.openai_responses.stream_encode import ResponsesStreamEncoder

_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed", "error"})


class OpenAIResponsesCodec:
    name = ProtocolName.OPENAI_RESPONSES
    response_id_prefix = "resp_"
    upstream_path = "/responses"
    forwarded_headers: tuple[str, ...] = ()
    requires_output_cap = False

    def is_terminal(self, event: str | None, data: str) -> bool:
        kind = event
        if kind is None and '"type"' in data:
            try:
                kind = orjson.loads(data).get("type")
            except orjson.JSONDecodeError:
                kind = None
        return kind in _TERMINAL

    def is_error_event(self, event: str | None, data: str) -> bool:
        return event in ("error", "response.failed")

    def carries_output(self, event: str | None, data: str) -> bool:
        # Output arrives as `response.<part>.delta` events (text, reasoning, refusal, tool arguments).
        if event is not None:
            return event.endswith(".delta")
        return '.delta"' in data

    def prepare_upstream_body(self, body: dict[str, Any], *, stream: bool, fast: bool) -> bool:
        if not stream and not fast:
            # A translated body may carry the client's own stream option; the fast path sends the client's body
            # as it is (the upstream answers it as it would without the gateway).
            body.pop("stream_options", None)
        return False

    def upstream_headers(self, client_headers: Mapping[str, str]) -> dict[str, str]:
        return {}

    def decode_request(self, body: dict[str, Any], headers: Mapping[str, str] | None = None) -> CanonicalRequest:
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
        self, message: str, type: str, *, code: str | None = None, param: str | None = None, status: int | None = None
    ) -> dict[str, Any]:
        return openai_error_body(message, type, code=code, param=param)
