"""The scriptable fake upstream answers each protocol in a shape the official SDKs accept."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import anthropic
import httpx
import openai
import pytest

from tests.support.fake_upstream import FakeUpstream, Reply, ToolCall, Usage


@pytest.fixture(scope="module")
def server() -> Iterator[FakeUpstream]:
    with FakeUpstream() as up:
        yield up


@pytest.fixture
def up(server: FakeUpstream) -> FakeUpstream:
    server.reset()
    server.set_default(Reply())
    return server


def oai(up: FakeUpstream) -> openai.OpenAI:
    return openai.OpenAI(base_url=up.base_url + "/v1", api_key="k", max_retries=0)


def ant(up: FakeUpstream) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=up.base_url, api_key="k", max_retries=0)


def sse_payloads(raw: str) -> list[str]:
    return [line[len("data: ") :] for line in raw.splitlines() if line.startswith("data: ")]


def test_chat_text_non_streaming(up: FakeUpstream) -> None:
    up.push(Reply.text("Paris is the capital.", usage=Usage(input_tokens=21, output_tokens=4, cache_read_tokens=5)))
    out = oai(up).chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "hi"}])
    assert out.choices[0].message.content == "Paris is the capital."
    assert out.choices[0].finish_reason == "stop"
    assert out.model == "gpt-x"
    assert out.usage is not None
    assert (out.usage.prompt_tokens, out.usage.completion_tokens, out.usage.total_tokens) == (21, 4, 25)
    assert out.usage.prompt_tokens_details is not None
    assert out.usage.prompt_tokens_details.cached_tokens == 5


def test_chat_stream_with_usage_chunk(up: FakeUpstream) -> None:
    up.push(Reply.text("one two three", usage=Usage(7, 3)))
    chunks = list(
        oai(up).chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "x"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 3


def test_chat_stream_raw_bytes_end_with_done_and_no_usage_chunk_by_default(up: FakeUpstream) -> None:
    r = httpx.post(up.base_url + "/v1/chat/completions", json={"model": "m", "stream": True})
    assert r.headers["content-type"].startswith("text/event-stream")
    payloads = sse_payloads(r.text)
    assert payloads[-1] == "[DONE]"
    assert all("usage" not in json.loads(p) for p in payloads[:-1])


def test_chat_streamed_parallel_tool_calls_merge_by_index(up: FakeUpstream) -> None:
    calls = [
        ToolCall("get_weather", {"city": "Paris"}, "call_a"),
        ToolCall("get_time", {"tz": "CET"}, "call_b"),
    ]
    up.push(Reply.tool_calls(calls))
    args: dict[int, str] = {}
    names: dict[int, str] = {}
    finish = None
    for chunk in oai(up).chat.completions.create(model="m", messages=[], stream=True):
        for tc in chunk.choices[0].delta.tool_calls or []:
            args[tc.index] = args.get(tc.index, "") + (tc.function.arguments or "" if tc.function else "")
            if tc.function and tc.function.name:
                names[tc.index] = tc.function.name
        finish = chunk.choices[0].finish_reason or finish
    assert names == {0: "get_weather", 1: "get_time"}
    assert json.loads(args[0]) == {"city": "Paris"} and json.loads(args[1]) == {"tz": "CET"}
    assert finish == "tool_calls"


def test_chat_tool_call_non_streaming(up: FakeUpstream) -> None:
    up.push(Reply.tool_call("lookup", {"q": "x"}, call_id="call_1"))
    msg = oai(up).chat.completions.create(model="m", messages=[]).choices[0].message
    assert msg.tool_calls is not None
    call = msg.tool_calls[0]
    assert call.id == "call_1" and call.type == "function"
    assert call.function.name == "lookup" and json.loads(call.function.arguments) == {"q": "x"}


def test_responses_non_streaming_and_streaming(up: FakeUpstream) -> None:
    client = oai(up)
    up.push(Reply.text("hello there", usage=Usage(9, 2)))
    resp = client.responses.create(model="m", input="hi")
    assert resp.output_text == "hello there"
    assert resp.usage is not None and resp.usage.input_tokens == 9 and resp.usage.output_tokens == 2
    up.push(Reply.text("a b c"))
    events = list(client.responses.create(model="m", input="hi", stream=True))
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "a b c"


def test_responses_function_call_and_length_finish(up: FakeUpstream) -> None:
    client = oai(up)
    up.push(Reply.tool_call("f", {"a": 1}, call_id="call_9"))
    item = client.responses.create(model="m", input="x").output[0]
    assert item.type == "function_call" and item.call_id == "call_9" and json.loads(item.arguments) == {"a": 1}
    up.push(Reply.text("cut", finish="length"))
    events = list(client.responses.create(model="m", input="x", stream=True))
    assert events[-1].type == "response.incomplete"


def test_messages_text_tool_use_and_stream(up: FakeUpstream) -> None:
    client = ant(up)
    up.push(Reply.text("bonjour", usage=Usage(input_tokens=30, output_tokens=2, cache_read_tokens=10)))
    msg = client.messages.create(model="claude-x", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert msg.content[0].type == "text" and msg.content[0].text == "bonjour"
    assert msg.stop_reason == "end_turn" and msg.model == "claude-x"
    assert msg.usage.input_tokens == 20 and msg.usage.cache_read_input_tokens == 10

    up.push(Reply.tool_call("get_weather", {"city": "Paris"}, text="Let me check."))
    with client.messages.stream(model="m", max_tokens=10, messages=[{"role": "user", "content": "w"}]) as s:
        final = s.get_final_message()
    assert [b.type for b in final.content] == ["text", "tool_use"]
    assert final.content[1].type == "tool_use" and final.content[1].input == {"city": "Paris"}
    assert final.stop_reason == "tool_use"


def test_messages_beta_query_is_accepted_and_recorded(up: FakeUpstream) -> None:
    r = httpx.post(up.base_url + "/v1/messages?beta=true", json={"model": "m"}, headers={"anthropic-version": "v1"})
    assert r.status_code == 200
    last = up.last_request
    assert last is not None
    assert (last.path, last.query, last.headers["anthropic-version"]) == ("/v1/messages", "beta=true", "v1")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            "/v1/chat/completions",
            {
                "error": {
                    "message": "slow down",
                    "type": "requests",
                    "param": None,
                    "code": "rate_limit_exceeded",
                }
            },
        ),
        (
            "/v1/messages",
            {
                "type": "error",
                "error": {"type": "rate_limit_error", "message": "slow down"},
                "request_id": "req_fake",
            },
        ),
    ],
)
def test_error_status_uses_protocol_error_body(up: FakeUpstream, path: str, expected: object) -> None:
    up.push(Reply.error(429, "slow down", code="rate_limit_exceeded", headers={"retry-after": "2"}))
    r = httpx.post(up.base_url + path, json={"model": "m", "stream": True})
    assert r.status_code == 429
    assert r.headers["retry-after"] == "2"
    assert r.headers["content-type"].startswith("application/json")
    assert r.json() == expected


def test_sdk_sees_upstream_errors(up: FakeUpstream) -> None:
    up.push(Reply.error(503, "down"))
    with pytest.raises(openai.InternalServerError):
        oai(up).responses.create(model="m", input="x")
    up.push(Reply.error(529, "busy"))
    with pytest.raises(anthropic.APIStatusError) as info:
        ant(up).messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert info.value.status_code == 529


def test_drop_mid_stream_cuts_the_connection(up: FakeUpstream) -> None:
    up.push(Reply.drop(after_events=2))
    received: list[str] = []
    with (
        pytest.raises(httpx.RemoteProtocolError),
        httpx.stream("POST", up.base_url + "/v1/chat/completions", json={"model": "m", "stream": True}) as r,
    ):
        for line in r.iter_lines():
            received.append(line)
    assert len([x for x in received if x.startswith("data: ")]) == 2
    up.push(Reply.drop())
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(up.base_url + "/v1/chat/completions", json={"model": "m"})


@pytest.mark.parametrize(
    ("path", "marker"),
    [
        ("/v1/messages", "event: error"),
        ("/v1/responses", "event: error"),
        ("/v1/chat/completions", '"error"'),
    ],
)
def test_error_after_sends_protocol_error_event(up: FakeUpstream, path: str, marker: str) -> None:
    up.push(Reply(error_after=3, error_message="boom"))
    r = httpx.post(up.base_url + path, json={"model": "m", "stream": True})
    assert r.status_code == 200
    assert marker in r.text and "boom" in r.text
    assert "[DONE]" not in r.text and "message_stop" not in r.text and "response.completed" not in r.text


def test_delay_and_path_scoped_script(up: FakeUpstream) -> None:
    up.push(Reply.text("for messages"), path="/v1/messages")
    up.push(Reply.text("slow", delay=0.2))
    t0 = time.monotonic()
    r = httpx.post(up.base_url + "/v1/chat/completions", json={"model": "m"})
    assert time.monotonic() - t0 >= 0.2
    assert r.json()["choices"][0]["message"]["content"] == "slow"
    r = httpx.post(up.base_url + "/v1/messages", json={"model": "m"})
    assert r.json()["content"][0]["text"] == "for messages"
    r = httpx.post(up.base_url + "/v1/messages", json={"model": "m"})
    assert r.json()["content"][0]["text"] == "Hello from the fake upstream."
    assert up.calls == {"/v1/chat/completions": 1, "/v1/messages": 2}
    assert up.call_count() == 3


def test_prefix_base_url_and_model_list(up: FakeUpstream) -> None:
    r = httpx.post(up.base_url + "/openai/v1/chat/completions", json={"model": "m"})
    assert r.json()["object"] == "chat.completion"
    assert httpx.get(up.base_url + "/v1/models").json()["data"][0]["id"] == "fake-model"


async def test_async_context_manager() -> None:
    async with FakeUpstream(Reply.text("async ok")) as up, httpx.AsyncClient() as client:
        r = await client.post(up.base_url + "/v1/chat/completions", json={"model": "m"})
        assert r.json()["choices"][0]["message"]["content"] == "async ok"
