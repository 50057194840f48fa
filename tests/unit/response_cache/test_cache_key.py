"""The response cache's key: equal requests in any JSON order or whitespace hit, one changed character
misses, streaming and delivery settings do not count, media counts by its bytes, teams' keys and protocols
are apart."""

from __future__ import annotations

import base64
import json
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from modelport.core.messages import CanonicalRequest
from modelport.protocols import CODECS
from modelport.response_cache.key import request_digest

PROTOCOL_NAMES = sorted(CODECS)
CHAT, RESPONSES, MESSAGES = "openai_chat", "openai_responses", "anthropic_messages"


def _digest(protocol: str, body: dict[str, Any], key_id: str | None = None) -> str:
    codec = CODECS[protocol]
    request = codec.decode_request(body, {})
    return request_digest(request, protocol, key_id=key_id, neutral=codec.cache_neutral)


def _body(protocol: str, text: str, **extra: Any) -> dict[str, Any]:
    if protocol == RESPONSES:
        return {"model": "p/m", "input": text, **extra}
    body: dict[str, Any] = {"model": "p/m", "messages": [{"role": "user", "content": text}], **extra}
    if protocol == MESSAGES:
        body.setdefault("max_tokens", 100)
    return body


def _shuffled(value: Any, rng: random.Random) -> Any:
    """The same JSON with every object's keys in another order, through text with other whitespace."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


texts = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(text=texts, temperature=st.floats(0, 1, allow_nan=False), seed=st.integers(0, 10_000))
def test_key_order_and_whitespace_do_not_matter(text: str, temperature: float, seed: int) -> None:
    rng = random.Random(seed)
    for protocol in PROTOCOL_NAMES:
        body = _body(protocol, text, temperature=temperature, metadata={"user_id": "u1"})
        if protocol == CHAT:
            body["metadata"] = {"a": "1"}
        again = json.loads(json.dumps(_shuffled(body, rng), indent=rng.choice([None, 1, 4])))
        assert _digest(protocol, body) == _digest(protocol, again)


@settings(max_examples=60, deadline=None)
@given(text=texts, at=st.integers(0, 39), replacement=st.characters(codec="utf-8"))
def test_one_changed_character_misses(text: str, at: int, replacement: str) -> None:
    at %= len(text)
    changed = text[:at] + replacement + text[at + 1 :]
    for protocol in PROTOCOL_NAMES:
        same = _digest(protocol, _body(protocol, text)) == _digest(protocol, _body(protocol, changed))
        assert same == (changed == text)


def test_streaming_is_not_part_of_the_key() -> None:
    assert _digest(CHAT, _body(CHAT, "hi")) == _digest(
        CHAT, _body(CHAT, "hi", stream=True, stream_options={"include_usage": True})
    )
    assert _digest(RESPONSES, _body(RESPONSES, "hi")) == _digest(RESPONSES, _body(RESPONSES, "hi", stream=True))
    assert _digest(RESPONSES, _body(RESPONSES, "hi", stream=False)) == _digest(RESPONSES, _body(RESPONSES, "hi"))
    assert _digest(RESPONSES, _body(RESPONSES, "hi", store=False)) == _digest(RESPONSES, _body(RESPONSES, "hi"))
    assert _digest(MESSAGES, _body(MESSAGES, "hi")) == _digest(MESSAGES, _body(MESSAGES, "hi", stream=True))


def test_what_can_change_the_answer_is_part_of_the_key() -> None:
    base = _digest(CHAT, _body(CHAT, "hi"))
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
    changes: list[dict[str, Any]] = [
        {"temperature": 0.2},
        {"top_p": 0.5},
        {"max_tokens": 10},
        {"stop": ["x"]},
        {"seed": 7},
        {"tools": [tool]},
        {"tools": [tool], "tool_choice": "required"},
        {"response_format": {"type": "json_object"}},
        {"n": 2},
    ]
    digests = {_digest(CHAT, _body(CHAT, "hi", **change)) for change in changes}
    assert base not in digests and len(digests) == len(changes)
    turns = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    system = {"model": "p/m", "messages": turns}
    assert _digest(CHAT, system) != base
    with_system = _body(MESSAGES, "hi", system="be brief")
    assert _digest(MESSAGES, with_system) != _digest(MESSAGES, _body(MESSAGES, "hi"))
    assert _digest(CHAT, {**_body(CHAT, "hi"), "model": "p/other"}) != base


def test_teams_keys_and_protocols_are_apart() -> None:
    request = CanonicalRequest(model="p/m", messages=[])
    digests = {
        request_digest(request, CHAT),
        request_digest(request, MESSAGES),
        request_digest(request, CHAT, key_id="key_a"),
        request_digest(request, CHAT, key_id="key_b"),
    }
    assert len(digests) == 4


def _image_body(data: str) -> dict[str, Any]:
    part = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}
    return {"model": "p/m", "messages": [{"role": "user", "content": [{"type": "text", "text": "see"}, part]}]}


def test_images_count_by_their_bytes() -> None:
    raw = bytes(range(256)) * 4
    one = base64.b64encode(raw).decode()
    other = base64.b64encode(raw[:-1] + b"\x00").decode()
    assert _digest(CHAT, _image_body(one)) == _digest(CHAT, _image_body(one))
    assert _digest(CHAT, _image_body(one)) != _digest(CHAT, _image_body(other))
