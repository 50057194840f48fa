"""The embedded model, run for real: text, exact token counts, streaming, cancellation, concurrency."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from modelport.errors import InvalidParameters
from modelport.upstreams.local_engine import find_gguf
from modelport.upstreams.local_model import LocalModel

pytestmark = pytest.mark.local_model

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
ESSAY = [{"role": "user", "content": "Write a very long essay about the history of the sea."}]


@pytest.fixture(scope="module")
def model() -> Iterator[LocalModel]:
    m = LocalModel()
    yield m
    m.close()


async def wait_idle(model: LocalModel, limit: float) -> float:
    started = time.monotonic()
    while model.running:
        if time.monotonic() - started > limit:
            raise AssertionError(f"model still busy after {limit} s")
        await asyncio.sleep(0.005)
    return time.monotonic() - started


def test_gguf_ships_in_the_package() -> None:
    path = find_gguf()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert path.read_bytes()[:4] == b"GGUF"


async def test_complete_returns_text_and_real_usage(model: LocalModel) -> None:
    out = await model.complete({"model": "x", "messages": QUESTION, "max_tokens": 24, "temperature": 0})
    assert out["object"] == "chat.completion"
    choice = out["choices"][0]
    assert choice["message"]["role"] == "assistant"
    assert choice["message"]["content"].strip()
    assert choice["finish_reason"] in ("stop", "length")
    usage = out["usage"]
    assert usage["prompt_tokens"] > 0
    assert 0 < usage["completion_tokens"] <= 24
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


async def test_usage_matches_llama_cpp_own_count(model: LocalModel) -> None:
    # llama-cpp-python counts usage itself in non-streaming mode: our metered counts must agree.
    from llama_cpp import Llama

    reference = Llama(model_path=str(find_gguf()), n_ctx=2048, n_threads=2, verbose=False)
    try:
        expected: Any = reference.create_chat_completion(
            messages=QUESTION,  # type: ignore[arg-type]
            max_tokens=20,
            temperature=0.0,
        )
    finally:
        reference.close()
    got = await model.complete({"messages": QUESTION, "max_tokens": 20, "temperature": 0})
    assert got["choices"][0]["message"]["content"] == expected["choices"][0]["message"]["content"]
    assert got["usage"]["prompt_tokens"] == expected["usage"]["prompt_tokens"]
    assert got["usage"]["completion_tokens"] == expected["usage"]["completion_tokens"]


async def test_length_finish_respects_max_completion_tokens(model: LocalModel) -> None:
    out = await model.complete({"messages": ESSAY, "max_completion_tokens": 5})
    assert out["choices"][0]["finish_reason"] == "length"
    assert out["usage"]["completion_tokens"] == 5


async def test_stream_chunks_concatenate_to_the_content(model: LocalModel) -> None:
    body = {
        "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": [{"type": "text", "text": "Name three colours."}]},
        ],
        "max_tokens": 30,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    chunks = [c async for c in model.stream(body)]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    content_chunks = [c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]
    assert len(content_chunks) > 3
    finish = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert len(finish) == 1 and finish[0] is chunks[-2]
    assert chunks[-1]["choices"] == []
    usage = chunks[-1]["usage"]
    assert usage["prompt_tokens"] > 0 and 0 < usage["completion_tokens"] <= 30
    assert all(c["usage"] is None for c in chunks[:-1])

    streamed = "".join(c["choices"][0]["delta"]["content"] for c in content_chunks)
    complete = await model.complete({**body, "stream": False})
    assert streamed == complete["choices"][0]["message"]["content"]
    assert usage == complete["usage"]


async def test_stream_without_include_usage_has_no_usage(model: LocalModel) -> None:
    chunks = [c async for c in model.stream({"messages": QUESTION, "max_tokens": 5})]
    assert chunks[-1]["choices"][0]["finish_reason"] is not None
    assert all("usage" not in c for c in chunks)


async def test_closing_the_stream_stops_generation(model: LocalModel) -> None:
    stream = model.stream({"messages": ESSAY, "max_tokens": 1500, "temperature": 0.8})
    received = 0
    async for _ in stream:
        received += 1
        if received == 4:
            break
    await stream.aclose()
    # 1500 tokens take ~10 s here; a stopped job is idle at the next token.
    assert await wait_idle(model, limit=1.0) < 1.0


async def test_cancelling_the_consumer_task_stops_generation(model: LocalModel) -> None:
    first = asyncio.Event()

    async def consume() -> None:
        async for _ in model.stream({"messages": ESSAY, "max_tokens": 1500, "temperature": 0.8}):
            first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_idle(model, limit=1.0) < 1.0
    # The instance is free again: a new request is served at once.
    out = await asyncio.wait_for(model.complete({"messages": QUESTION, "max_tokens": 3}), 10)
    assert out["usage"]["completion_tokens"] <= 3


async def test_event_loop_keeps_running_during_generation(model: LocalModel) -> None:
    gaps: list[float] = []
    done = False

    async def ticker() -> None:
        last = time.monotonic()
        while not done:
            await asyncio.sleep(0.005)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    tick = asyncio.create_task(ticker())
    await model.complete({"messages": ESSAY, "max_tokens": 60})
    done = True
    await tick
    assert len(gaps) > 10
    assert max(gaps) < 0.1


async def test_two_concurrent_requests_both_complete(model: LocalModel) -> None:
    bodies = [
        {"messages": QUESTION, "max_tokens": 12},
        {"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 12},
    ]

    async def collect() -> str:
        return "".join([c["choices"][0]["delta"].get("content", "") async for c in model.stream(bodies[1])])

    first, second = await asyncio.gather(model.complete(bodies[0]), collect())
    assert first["choices"][0]["message"]["content"]
    assert second


async def test_two_instances_serve_in_parallel() -> None:
    m = LocalModel(instances=2, n_threads=1)
    try:
        outs = await asyncio.gather(*(m.complete({"messages": QUESTION, "max_tokens": 8}) for _ in range(3)))
        assert all(o["usage"]["completion_tokens"] > 0 for o in outs)
    finally:
        m.close()


async def test_json_response_format_gives_json(model: LocalModel) -> None:
    out = await model.complete(
        {
            "messages": [{"role": "user", "content": "Give a JSON object with a key name."}],
            "max_tokens": 40,
            "response_format": {"type": "json_object"},
        }
    )
    text = out["choices"][0]["message"]["content"]
    if out["choices"][0]["finish_reason"] == "stop":
        assert isinstance(json.loads(text), dict)
    else:
        assert text.lstrip().startswith("{")


async def test_prompt_longer_than_context_is_a_400(model: LocalModel) -> None:
    long = " ".join(["word"] * 4000)
    with pytest.raises(InvalidParameters) as info:
        await model.complete({"messages": [{"role": "user", "content": long}], "max_tokens": 5})
    assert info.value.param == "messages" and info.value.code == "context_length_exceeded"
    assert (await model.complete({"messages": QUESTION, "max_tokens": 2}))["usage"]["completion_tokens"] <= 2


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "required"}, "tool_choice"),
        ({"n": 2}, "n"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
            "messages[0].content[0]",
        ),
    ],
)
def test_unsupported_requests_fail_before_generation(model: LocalModel, body: dict[str, Any], param: str) -> None:
    full = {"messages": QUESTION, **body}
    with pytest.raises(InvalidParameters) as info:
        model.stream(full)
    assert info.value.param == param


async def test_stream_with_too_long_prompt_fails_before_the_first_chunk(model: LocalModel) -> None:
    long = " ".join(["word"] * 4000)
    stream = model.stream({"messages": [{"role": "user", "content": long}], "max_tokens": 5})
    with pytest.raises(InvalidParameters) as info:
        await stream.__anext__()
    assert info.value.code == "context_length_exceeded"


async def test_close_cancels_a_running_generation() -> None:
    m = LocalModel()
    stream = m.stream({"messages": ESSAY, "max_tokens": 1500, "temperature": 0.8})
    await stream.__anext__()
    assert m.running == 1
    started = time.monotonic()
    await asyncio.to_thread(m.close)
    assert time.monotonic() - started < 1.0
    assert m.running == 0
    await stream.aclose()
