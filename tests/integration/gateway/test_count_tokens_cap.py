"""`count_tokens` is free, so the input it counts is capped at the model's context window: megabytes of
text are answered from the estimate with `over_context_window`, never tokenized by the embedded model nor
sent to an upstream (issue 21 item 13). Before: 8 MB counted on the embedded model cost 6 s of CPU."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.integration.gateway.conftest import Gateway
from tests.integration.gateway.test_gateway_behaviour import post

MiB = 1024 * 1024


@pytest.mark.parametrize(("model", "window"), [("fake/claude", 200_000), ("local/smollm2-135m-instruct", 200_000)])
def test_input_far_past_the_context_window_is_not_counted(gw: Gateway, model: str, window: int) -> None:
    text = "river " * (8 * MiB // 6)  # ~8 MB: 2 million estimated tokens
    started = time.monotonic()
    r = post(gw, "/v1/messages/count_tokens", {"model": model, "messages": [{"role": "user", "content": text}]})
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["estimated"] is True and answer["over_context_window"] is True, answer
    assert answer["context_window"] == window and answer["input_tokens"] > window
    assert gw.upstream.requests == []  # the upstream's counting endpoint was not asked either
    assert time.monotonic() - started < 20  # generous: the point is no tokenizing, measured below too


def test_input_within_the_window_is_still_counted_by_the_upstream(gw: Gateway) -> None:
    text = "river " * 100_000  # 600 KB: within 200,000 tokens of 16 characters
    r = post(gw, "/v1/messages/count_tokens", {"model": "fake/claude", "messages": [{"role": "user", "content": text}]})
    assert r.status_code == 200, r.text
    assert "over_context_window" not in r.json() and "estimated" not in r.json()
    assert [q.path for q in gw.upstream.requests] == ["/v1/messages/count_tokens"]


@pytest.mark.local_model
def test_embedded_model_counts_beyond_the_slots_get_the_estimate(gw: Gateway) -> None:
    """At most two embedded-model counts run at once per process; the others are answered from the
    estimate at once instead of queueing more unbilled CPU work on the model's threads."""
    body = {"model": "local/smollm2-135m-instruct", "messages": [{"role": "user", "content": "river " * 20_000}]}
    assert "estimated" not in post(gw, "/v1/messages/count_tokens", body).json()  # the model is loaded

    def count(_: int) -> dict[str, object]:
        r = post(gw, "/v1/messages/count_tokens", body)
        assert r.status_code == 200, r.text
        answer: dict[str, object] = r.json()
        return answer

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(count, range(8)))
    exact = [a for a in answers if "estimated" not in a]
    assert 1 <= len(exact) < len(answers), answers  # some counted, the rest estimated
    assert all(a["input_tokens"] == exact[0]["input_tokens"] for a in exact)
