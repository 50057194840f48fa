"""A request's settlement runs after its answer's last byte (`gateway/answer.run_after`), once, sent or not."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from modelport.gateway.answer import BodyAnswer, StreamAnswer

Message = dict[str, Any]


async def _never() -> Message:
    """A client that never hangs up (what the disconnect watcher waits on)."""
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


def _recorder(events: list[str], fail_on: str | None = None) -> Any:
    async def send(message: Message) -> None:
        kind = "start" if message["type"] == "http.response.start" else "body"
        if kind == "body" and not message.get("more_body", False):
            kind = "end"
        if kind == fail_on:
            raise OSError("the connection is gone")
        events.append(kind)

    return send


async def test_a_body_answer_runs_its_after_once_its_body_is_sent() -> None:
    events: list[str] = []
    answer = BodyAnswer(b"{}")
    answer.after = lambda: events.append("after")
    await answer({"type": "http"}, _never, _recorder(events))
    assert events == ["start", "end", "after"]
    await answer({"type": "http"}, _never, _recorder(events))
    assert events.count("after") == 1  # once, however often it is called


async def test_a_body_answer_runs_its_after_when_sending_fails() -> None:
    events: list[str] = []
    answer = BodyAnswer(b"{}")
    answer.after = lambda: events.append("after")
    with pytest.raises(OSError):
        await answer({"type": "http"}, _never, _recorder(events, fail_on="end"))
    assert events == ["start", "after"]


async def test_a_stream_runs_the_after_its_relay_set_after_the_closing_chunk() -> None:
    events: list[str] = []
    answer: StreamAnswer

    async def relay() -> AsyncGenerator[bytes, None]:
        try:
            yield b"data: 1\n\n"
            yield b"data: 2\n\n"
        finally:
            # An end that sets the answer's `after` late, as a relay's end may: run after the closing chunk.
            answer.after = lambda: events.append("after")

    answer = StreamAnswer(relay())
    await answer({"type": "http"}, _never, _recorder(events))
    assert events == ["start", "body", "body", "end", "after"]


async def test_a_stream_cut_by_a_failed_send_still_settles() -> None:
    events: list[str] = []
    answer: StreamAnswer

    async def relay() -> AsyncGenerator[bytes, None]:
        try:
            while True:
                yield b"data: x\n\n"
        finally:
            answer.after = lambda: events.append("after")

    answer = StreamAnswer(relay())
    with pytest.raises(OSError):
        await answer({"type": "http"}, _never, _recorder(events, fail_on="body"))
    assert events == ["start", "after"]
