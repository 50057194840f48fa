"""Judging a 200 before anything is relayed (`gateway/first_byte.py`): a stream up to its first content event."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from modelport.gateway.first_byte import NotAnswered, judge_body, judge_stream
from modelport.protocols import CODECS
from modelport.upstreams.transport import UpstreamReply, UpstreamStreamBroken

CHAT = CODECS["openai_chat"]
ROLE = b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'
TEXT = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
ERROR = b'data: {"error":{"message":"quota exceeded","code":"insufficient_quota"}}\n\n'
DONE = b"data: [DONE]\n\n"


def _reply(*chunks: bytes, broken: bool = False) -> tuple[UpstreamReply, list[str]]:
    released: list[str] = []

    async def stream() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk
        if broken:
            raise UpstreamStreamBroken("gone")

    async def release() -> None:
        released.append("released")

    return UpstreamReply(200, {}, chunks=stream(), release=release), released


async def _all(reply: UpstreamReply) -> bytes:
    assert reply.chunks is not None
    return b"".join([chunk async for chunk in reply.chunks])


async def test_the_chunks_read_are_replayed_in_front_of_the_rest() -> None:
    reply, released = _reply(ROLE, TEXT[:20], TEXT[20:] + ERROR, DONE)
    await judge_stream(reply, CHAT, None)
    assert await _all(reply) == ROLE + TEXT + ERROR + DONE  # an error after content is the relay's business
    assert released == []


@pytest.mark.parametrize(
    ("chunks", "broken", "message"),
    [
        ((ROLE, ERROR, TEXT), False, "quota exceeded"),
        ((ROLE + ERROR + TEXT,), False, "quota exceeded"),  # in one chunk, before the content
        ((ROLE,), False, "ended before its first event"),
        ((ROLE,), True, "broke before its first event"),
        ((b'data: {"broken\n\n',), False, "ended before its first event"),
    ],
)
async def test_a_stream_that_fails_before_content_is_not_answered(
    chunks: tuple[bytes, ...], broken: bool, message: str
) -> None:
    reply, released = _reply(*chunks, broken=broken)
    with pytest.raises(NotAnswered, match=message) as caught:
        await judge_stream(reply, CHAT, None)
    assert released == ["released"]
    assert caught.value.code == ("insufficient_quota" if "quota" in message else None)


async def test_an_empty_answer_is_an_answer() -> None:
    reply, _ = _reply(ROLE, DONE)
    await judge_stream(reply, CHAT, None)
    assert await _all(reply) == ROLE + DONE


def test_a_body_that_is_an_error_object_or_not_json_is_not_answered() -> None:
    ok = judge_body(UpstreamReply(200, {}, body=b'{"id":"x","choices":[],"error":null}'), CHAT)
    assert ok["id"] == "x"
    for body in (b'{"error":{"message":"no"}}', b'{"error":"no"}', b"[1]", b"{not json"):
        with pytest.raises(NotAnswered):
            judge_body(UpstreamReply(200, {}, body=body), CHAT)
