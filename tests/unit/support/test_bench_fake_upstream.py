"""The benchmark's fake upstream: run as a process, answers all three protocols fast and correctly."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "bench" / "fake_upstream.py"


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[str, subprocess.Popen[str]]]:
    # `with`: the pipes are closed (and the process waited for) when the module's tests are done.
    with subprocess.Popen(
        [sys.executable, str(SCRIPT), "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("ready http://127.0.0.1:"), (line, proc.stderr.read() if proc.stderr else "")
        try:
            yield line.split()[1], proc
        finally:
            if proc.poll() is None:
                proc.kill()


# Clients are used in `with` blocks and processes through `with Popen`: a socket or pipe left open would be
# a ResourceWarning, an error under `filterwarnings = error`.


@pytest.fixture
def url(upstream: tuple[str, subprocess.Popen[str]]) -> str:
    return upstream[0]


def test_chat_completions_non_streaming_after_the_delay(url: str) -> None:
    with openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0) as client:
        started = time.monotonic()
        out = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert time.monotonic() - started >= 0.05
        assert out.choices[0].message.content == "".join(f"w{i} " for i in range(16))
        assert out.usage is not None and (out.usage.prompt_tokens, out.usage.completion_tokens) == (20, 16)


def test_chat_completions_stream_has_16_deltas_and_usage(url: str) -> None:
    with openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0) as client:
        chunks = list(
            client.chat.completions.create(model="m", messages=[], stream=True, stream_options={"include_usage": True})
        )
        deltas = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
        assert len(deltas) == 16
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
        assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 36
        raw = httpx.post(url + "/v1/chat/completions", json={"model": "m", "stream": True}).text
        assert raw.endswith("data: [DONE]\n\n") and '"usage"' not in raw


def test_responses_both_ways(url: str) -> None:
    with openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0) as client:
        assert client.responses.create(model="m", input="x").output_text.count("w") == 16
        events = list(client.responses.create(model="m", input="x", stream=True))
        assert [e.sequence_number for e in events] == list(range(len(events)))
        assert sum(e.type == "response.output_text.delta" for e in events) == 16
        last = events[-1]
        assert last.type == "response.completed" and last.response.usage is not None
        assert last.response.usage.output_tokens == 16


def test_messages_both_ways(url: str) -> None:
    with anthropic.Anthropic(base_url=url, api_key="k", max_retries=0) as client:
        msg = client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])
        assert msg.usage.output_tokens == 16 and msg.stop_reason == "end_turn"
        with client.messages.stream(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]) as s:
            kinds = [e.type for e in s]
            final = s.get_final_message()
        assert kinds.count("content_block_delta") == 16 and kinds[-1] == "message_stop"
        assert final.usage.output_tokens == 16


def test_stream_is_spread_over_the_delay() -> None:
    # Its own upstream with a long delay: the spread (~250 ms between writes) stays far above the scheduling
    # jitter of a busy machine (1.5 s, ~94 ms apart, failed at load 9 on 2 cores: writes ran together).
    with subprocess.Popen(
        [sys.executable, str(SCRIPT), "--port", "0", "--delay-ms", "4000"], stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        try:
            url = proc.stdout.readline().split()[1]
            arrivals: list[float] = []
            started = time.monotonic()
            with httpx.stream("POST", url + "/v1/messages?beta=true", json={"model": "m", "stream": True}) as r:
                for chunk in r.iter_raw():
                    if chunk:
                        arrivals.append(time.monotonic() - started)
        finally:
            proc.kill()
    assert arrivals[-1] >= 4.0
    # The first token comes long before the last (spread mode), not all at the end.
    assert arrivals[0] < arrivals[-1] * 0.6
    assert len(arrivals) > 4


def test_frame_ms_paces_the_stream_whatever_the_delay() -> None:
    # A 60 s delay: were --frame-ms ignored, the 3 writes would be 20 s apart (httpx's 5 s read timeout fails
    # the test); with it they are 300 ms apart, so the stream lasts at least 0.9 s (a bound load cannot break).
    with subprocess.Popen(
        [sys.executable, str(SCRIPT), "--port", "0", "--delay-ms", "60000", "--chunks", "3", "--frame-ms", "300"],
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        try:
            url = proc.stdout.readline().split()[1]
            started = time.monotonic()
            with httpx.stream("POST", url + "/v1/chat/completions", json={"model": "m", "stream": True}) as r:
                body = b"".join(r.iter_raw())
            took = time.monotonic() - started
        finally:
            proc.kill()
    assert body.count(b'"content":"w') == 3 and body.endswith(b"data: [DONE]\n\n")
    assert 0.89 <= took < 30


def test_unknown_path_is_404_and_health_is_200(url: str) -> None:
    assert httpx.post(url + "/v1/embeddings", json={}).status_code == 404
    assert httpx.get(url + "/health").status_code == 200


async def test_64_concurrent_requests_are_answered_in_parallel(url: str) -> None:
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(limits=limits) as client:

        async def one(i: int) -> int:
            path = ("/v1/chat/completions", "/v1/responses", "/v1/messages")[i % 3]
            r = await client.post(url + path, json={"model": "m", "stream": i % 2 == 0})
            return r.status_code

        started = time.monotonic()
        for _ in range(3):  # reuse keep-alive connections
            codes = await asyncio.gather(*(one(i) for i in range(64)))
            assert codes == [200] * 64
        # Serially 192 requests take at least 192 x 50 ms (the default delay) = 9.6 s, on any machine; parallel
        # takes well under 2 s on a quiet one. 8 s leaves room for a loaded CI host (6 s ran out there once)
        # while still failing a fake that answers one request at a time.
        assert time.monotonic() - started < 8.0


def test_sigterm_prints_request_count_and_cpu() -> None:
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--port", "0", "--delay-ms", "1"], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().split()[1]
    for _ in range(3):
        httpx.post(url + "/v1/responses", json={"model": "m"})
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=10)
    stats = json.loads(out.strip().splitlines()[-1])
    assert stats["requests"] == 3 and stats["cpu_seconds"] > 0
