"""The stream relays' terminal-event logic: a stream that ends with its protocol's final event ends cleanly;
one that breaks or just stops ends with the client protocol's error event; a hang-up is reported as such;
what the relay learned is its result once it has ended, whichever way it ends."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator

import pytest

from modelport.accounts.auth import AuthContext
from modelport.catalog_spec import Deployment, TextModel
from modelport.gateway.context import Relayed, RequestContext, Timings
from modelport.gateway.relay import STREAM_BROKEN_MESSAGE, StreamRelay
from modelport.gateway.routing import Candidate
from modelport.gateway.upstream_call import OpenCall
from modelport.protocols import get_codec
from modelport.upstreams.transport import UpstreamReply, UpstreamStreamBroken

CHAT_CHUNK = (
    b'data: {"id":"c1","object":"chat.completion.chunk","model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
)
CHAT_DONE = b"data: [DONE]\n\n"


@pytest.mark.parametrize(
    ("protocol", "event", "data", "terminal", "error"),
    [
        ("openai_chat", None, "[DONE]", True, False),
        ("openai_chat", None, '{"error": {"message": "x"}}', False, True),
        ("openai_chat", None, '{"choices": []}', False, False),
        ("anthropic_messages", "message_stop", "{}", True, False),
        ("anthropic_messages", "error", '{"type": "error"}', True, True),
        ("anthropic_messages", "content_block_delta", "{}", False, False),
        ("openai_responses", "response.completed", "{}", True, False),
        ("openai_responses", None, '{"type": "response.incomplete"}', True, False),
        ("openai_responses", "response.failed", "{}", True, True),
        ("openai_responses", "response.output_text.delta", "{}", False, False),
    ],
)
def test_each_codec_knows_its_final_and_error_events(
    protocol: str, event: str | None, data: str, terminal: bool, error: bool
) -> None:
    codec = get_codec(protocol)
    assert codec.is_terminal(event, data) is terminal
    assert codec.is_error_event(event, data) is error


def context(protocol: str) -> RequestContext:
    codec = get_codec(protocol)
    body = {"model": "acme/chat", "stream": True, "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    return RequestContext(
        request_id="req_1", endpoint="e", codec=codec,
        auth=AuthContext("key_1", "mp-", "team_1", "t", "free"), body=body, canonical=codec.decode_request(body),
        model=TextModel(id="acme/chat", deployments=[Deployment(kind="openai_chat", model="m", base_url="http://x")]),
        stream=True, session_id=None, svc_user_id=None, headers={}, started_ms=0,
    )  # fmt: skip


class Ends:
    """What a relay's end gave: its `result`, read once the stream ended (`calls`: 1 once it has one)."""

    def __init__(self, relay: StreamRelay) -> None:
        self._relay = relay

    @property
    def calls(self) -> int:
        return 0 if self._relay.result is None else 1

    @property
    def relayed(self) -> Relayed:
        return self._relay.result or Relayed()


def open_call(chunks: list[bytes], *, breaks: bool = False, fast: bool = True) -> tuple[OpenCall, list[str]]:
    released: list[str] = []

    async def stream() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk
        if breaks:
            raise UpstreamStreamBroken("ClientPayloadError")

    async def release() -> None:
        released.append("released")

    reply = UpstreamReply(200, {}, chunks=stream(), release=release)
    candidate = Candidate("acme/chat#0", Deployment(kind="openai_chat", model="m", base_url="http://x"))
    codec = get_codec("openai_chat")
    return OpenCall(candidate, fast, codec, reply, False), released


async def relay_fast(chunks: list[bytes], *, breaks: bool = False) -> tuple[bytes, Relayed, Ends, list[str]]:
    call, released = open_call(chunks, breaks=breaks)
    relay = StreamRelay(context("openai_chat"), call, Timings(), "")
    ends = Ends(relay)
    out = b"".join([part async for part in relay])
    return out, ends.relayed, ends, released


async def test_a_stream_with_its_final_event_ends_cleanly() -> None:
    out, relayed, ends, released = await relay_fast([CHAT_CHUNK, CHAT_DONE])
    assert out.endswith(CHAT_DONE) and b"error" not in out
    assert relayed.error is None and not relayed.hung_up and relayed.relayed_events == 2
    assert ends.calls == 1 and released == ["released"]


@pytest.mark.parametrize("breaks", [False, True])
async def test_a_stream_that_stops_or_breaks_ends_with_the_protocols_error_event(breaks: bool) -> None:
    out, relayed, ends, released = await relay_fast([CHAT_CHUNK], breaks=breaks)
    assert out.startswith(b"data: {") and STREAM_BROKEN_MESSAGE.encode() in out.split(b"\n\n")[-2]
    assert relayed.error == STREAM_BROKEN_MESSAGE
    assert ends.calls == 1 and released == ["released"]


async def test_a_hang_up_is_a_cancel_and_finishes_once() -> None:
    call, released = open_call([CHAT_CHUNK, CHAT_CHUNK, CHAT_DONE])
    relay = StreamRelay(context("openai_chat"), call, Timings(), "")
    ends = Ends(relay)
    stream = aiter(relay)
    assert isinstance(stream, AsyncGenerator)
    assert b"hi" in await anext(stream)
    await relay.aclose()  # what the stream answer does when the client goes away
    assert ends.relayed.hung_up and ends.relayed.error is None
    assert ends.calls == 1 and released == ["released"]


async def test_a_translated_stream_closes_in_the_clients_protocol_or_reports_the_cut() -> None:
    ctx = context("anthropic_messages")
    for chunks, ok in (([CHAT_CHUNK, CHAT_DONE], True), ([CHAT_CHUNK], False)):
        call, released = open_call(chunks, fast=False)
        relay = StreamRelay(ctx, call, Timings(), "msg_1")
        ends = Ends(relay)
        out = b"".join([p async for p in relay])
        assert (b"event: message_stop" in out) is ok
        assert (b"event: error" in out) is not ok
        assert (ends.relayed.error is None) is ok and ends.relayed.produced_chars == 2
        assert ends.calls == 1 and released == ["released"]
