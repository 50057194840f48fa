"""Wire protocols of the text gateway. Each subpackage exposes ``CODEC`` (a `ProtocolCodec`)."""

from __future__ import annotations

from importlib import import_module
from typing import cast

from modelport.core.codec import ProtocolCodec

PROTOCOLS = ("openai_chat", "openai_responses", "anthropic_messages")


def get_codec(name: str) -> ProtocolCodec:
    """The codec of protocol `name`; KeyError for an unknown name. Imported lazily on first use."""
    if name not in PROTOCOLS:
        raise KeyError(name)
    module = import_module(f"modelport.protocols.{name}")
    return cast(ProtocolCodec, module.CODEC)
