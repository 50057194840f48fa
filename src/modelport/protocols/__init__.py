"""Wire protocols of the text gateway. Each subpackage exposes ``CODEC`` (a `ProtocolCodec`)."""

from __future__ import annotations

from modelport.core.codec import ProtocolCodec, ProtocolName
from modelport.protocols.anthropic_messages import CODEC as _MESSAGES
from modelport.protocols.openai_chat import CODEC as _CHAT
from modelport.protocols.openai_responses import CODEC as _RESPONSES

CODECS: dict[str, ProtocolCodec] = {codec.name: codec for codec in (_CHAT, _RESPONSES, _MESSAGES)}
PROTOCOLS = tuple(ProtocolName)


def get_codec(name: str) -> ProtocolCodec:
    """The codec of protocol `name`; KeyError for an unknown name."""
    return CODECS[name]
