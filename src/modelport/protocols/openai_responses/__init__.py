"""OpenAI Responses (``POST /v1/responses``) ↔ the canonical model."""

from modelport.protocols.openai_responses.codec import CODEC
from modelport.protocols.openai_responses.request_decode import decode_request
from modelport.protocols.openai_responses.request_encode import encode_request
from modelport.protocols.openai_responses.response import decode_response, encode_response
from modelport.protocols.openai_responses.stream_decode import ResponsesStreamDecoder
from modelport.protocols.openai_responses.stream_encode import ResponsesStreamEncoder
from modelport.protocols.openai_responses.usage import (
    ResponsesUsageSniffer,
    usage_from_body,
    usage_from_wire,
    usage_to_wire,
)

__all__ = [
    "CODEC",
    "ResponsesStreamDecoder",
    "ResponsesStreamEncoder",
    "ResponsesUsageSniffer",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "usage_from_body",
    "usage_from_wire",
    "usage_to_wire",
]
