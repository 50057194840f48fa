"""The fast path names the client's model in relayed answers and changes nothing else."""

from __future__ import annotations

import json

import orjson
import pytest

from modelport.gateway.model_name import ModelNamer, splice_request_model

NAMER = ModelNamer("acme/claude")


def test_chat_chunk_keeps_every_other_byte() -> None:
    chunk = '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[]}'
    assert NAMER.event(chunk) == chunk.replace("gpt-4o-2024-08-06", "acme/claude")


def test_nested_answer_objects_and_spacing() -> None:
    start = '{"type": "message_start", "message": {"id": "m", "model" : "claude-3-5-sonnet-20241022", "content": []}}'
    assert json.loads(NAMER.event(start))["message"]["model"] == "acme/claude"
    created = '{"type":"response.created","response":{"id":"r","instructions":"say \\"model\\":\\"x\\"","model":"o3"}}'
    out = json.loads(NAMER.event(created))
    assert out["response"]["model"] == "acme/claude"
    assert out["response"]["instructions"] == 'say "model":"x"'


def test_deeper_model_keys_and_strings_are_untouched() -> None:
    delta = (
        '{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"model\\":"}}'
    )
    assert NAMER.event(delta) is delta
    body = {
        "id": "msg_1",
        "content": [{"type": "tool_use", "id": "t", "name": "pick", "input": {"model": "keep-me"}}],
        "model": "claude-up",
    }
    raw = json.dumps(body, indent=2).encode()
    out = json.loads(NAMER.body(raw, json.loads(raw)))
    assert out["model"] == "acme/claude"
    assert out["content"][0]["input"] == {"model": "keep-me"}


def test_body_bytes_are_kept_but_for_the_model() -> None:
    raw = b'{"id":"x","model":"up","usage":{"prompt_tokens":1.0E0},"text":"\\u00e9"}'
    assert NAMER.body(raw, orjson.loads(raw)) == raw.replace(b'"up"', b'"acme/claude"')


def test_unusual_key_spelling_falls_back_to_reserialising() -> None:
    raw = b'{"id":"x","mod\\u0065l":"up"}'
    assert orjson.loads(NAMER.body(raw, orjson.loads(raw)))["model"] == "acme/claude"


def test_a_stream_of_chunks_sharing_a_prefix() -> None:
    namer = ModelNamer("acme/chat")
    head = '{"id":"c","object":"chat.completion.chunk","created":1,"model":"up","choices":'
    chunks = [head + json.dumps([{"delta": {"content": word}}]) + "}" for word in ("a", "b", "c")]
    assert [json.loads(namer.event(c))["model"] for c in chunks] == ["acme/chat"] * 3
    other = '{"type":"x","nested":{"deeper":{"model":"keep"}},"model":"up"}'
    assert json.loads(namer.event(other)) == {
        "type": "x",
        "nested": {"deeper": {"model": "keep"}},
        "model": "acme/chat",
    }


# ---------------------------------------------------------------- requests: the client's bytes, the upstream's model


@pytest.mark.parametrize(
    "raw",
    [
        b'{"messages": [{"role": "user", "content": "hi"}], "model": "fake/chat", "temperature": 0.50}',
        b'{\n  "model" :  "fake/chat",\n  "input": "caf\\u00e9"\n}',
    ],
)
def test_a_request_keeps_every_byte_but_the_model_value(raw: bytes) -> None:
    body = {**orjson.loads(raw), "model": "gpt-4o"}
    spliced = splice_request_model(raw, body)
    assert spliced is not None and orjson.loads(spliced) == body
    assert spliced.replace(b'"gpt-4o"', b'"fake/chat"') == raw


@pytest.mark.parametrize(
    "raw",
    [
        b'{"model": "fake/chat", "metadata": {"model": "x"}}',  # named twice
        b'{"mod\\u0065l": "fake/chat", "metadata": {"model": "fake/chat"}}',  # the top-level key spelled with escapes
    ],
)
def test_a_request_naming_model_oddly_is_not_spliced(raw: bytes) -> None:
    body = {**orjson.loads(raw), "model": "gpt-4o"}
    assert splice_request_model(raw, body) is None
