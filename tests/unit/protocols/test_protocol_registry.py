"""protocols.get_codec finds each protocol package's CODEC by name."""

from __future__ import annotations

import pytest

from modelport.protocols import get_codec


def test_chat_codec_by_name() -> None:
    codec = get_codec("openai_chat")
    assert codec.name == "openai_chat"
    req = codec.decode_request({"model": "a/b", "messages": [{"role": "user", "content": "hi"}]})
    assert codec.encode_request(req, "b")["messages"] == [{"role": "user", "content": "hi"}]


def test_unknown_protocol() -> None:
    with pytest.raises(KeyError):
        get_codec("smtp")
