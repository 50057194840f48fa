"""Anthropic Messages (``POST /v1/messages``) ↔ the canonical model."""

from modelport.protocols.anthropic_messages.codec import CODEC
from modelport.protocols.anthropic_messages.request_decode import decode_request
from modelport.protocols.anthropic_messages.request_encode import encode_request
from modelport.protocols.anthropic_messages.response import decode_response, encode_response, message_id
from modelport.protocols.anthropic_messages.stream_decode import MessagesStreamDecoder
from modelport.protocols.anthropic_messages.stream_encode import MessagesStreamEncoder
from modelport.protocols.anthropic_messages.usage import (
    MessagesUsageSniffer,
    usage_from_body,
    usage_from_wire,
    usage_to_wire,
)

__all__ = [
    "CODEC",
    "MessagesStreamDecoder",
    "MessagesStreamEncoder",
    "MessagesUsageSniffer",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "message_id",
    "usage_from_body",
    "usage_from_wire",
    "usage_to_wire",
]
