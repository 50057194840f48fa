"""The Chat Completions `ProtocolCodec`: ties the decode/encode modules of this package together."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from modelport.core.codec import ProtocolName, openai_error_body
from modelport.core.messages import CanonicalRequest
from modelport.core.response import CanonicalResponse
from modelport.core.usage import Usage
from modelport.protocols.openai_chat import request_decode, request_encode, response, usage
from modelport.protocols.openai_chat.stream_decode import ChatStreamDecoder
from modelport.protocols.openai_chat.stream_encode import ChatStreamEncoder

# Delta fields that carry output (the first chunk usually has only an empty `content` and the role).
_OUTPUT_FIELDS = ("content", "tool_calls", "reasoning_content", "reasoning", "refusal", "function_call")


class OpenAIChatCodec:
    name = ProtocolName.OPENAI_CHAT
    response_id_prefix = "chatcmpl-"
    upstream_path = "/chat/completions"
    forwarded_headers: tuple[str, ...] = ()
    requires_output_cap = False

    def is_terminal(self, event: str | None, data: str) -> bool:
        return data.strip() == "[DONE]"

    def is_error_event(self, event: str | None, data: str) -> bool:
        return data.startswith('{"error"')

    def carries_output(self, event: str | None, data: str) -> bool:
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

    def prepare_upstream_body(self, body: dict[str, Any], *, stream: bool, fast: bool) -> bool:
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
        self, message: str, type: str, *, code: str | None = None, param: str | None = None, status: int | None = None
    ) -> dict[str, Any]:
        return openai_error_body(message, type, code=code, param=param)
