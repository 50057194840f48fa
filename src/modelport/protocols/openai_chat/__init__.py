"""OpenAI Chat Completions (``POST /v1/chat/completions``) ↔ the canonical model."""

from modelport.protocols.openai_chat.codec import CODEC
from modelport.protocols.openai_chat.request_decode import decode_request
from modelport.protocols.openai_chat.request_encode import encode_request
from modelport.protocols.openai_chat.response import decode_response, encode_response
from modelport.protocols.openai_chat.stream_decode import ChatStreamDecoder
from modelport.protocols.openai_chat.stream_encode import ChatStreamEncoder
from modelport.protocols.openai_chat.usage import ChatUsageSniffer, usage_from_body, usage_from_wire, usage_to_wire

__all__ = [
    "CODEC",
    "ChatStreamDecoder",
    "ChatStreamEncoder",
    "ChatUsageSniffer",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "usage_from_body",
    "usage_from_wire",
    "usage_to_wire",
]
