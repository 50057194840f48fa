"""With Redis, deployment health is shared by every `serve` process (issue 39).

Two real `modelport serve` processes (their own data directories, one Redis and one prefix) route models
over deployment A (a fake scripted to fail) and B (healthy, weight 0: tried only when A fails or cools).
A cooldown one process enters is honoured by the other within a second, and failures in both count in one
window. Fails, not skips, when Redis is unreachable.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.support.fake_upstream import FakeUpstream, Reply
from tests.support.server import RunningServer, run_server

pytestmark = pytest.mark.redis

REDIS_URL = os.environ.get("MODELPORT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def _catalog(flaky: str, healthy: str) -> str:
    return "\n".join(
        f"""[[text_models]]
id = "share/{name}"
deployments = [
  {{ name = "a", kind = "openai_chat", base_url = "{flaky}/v1", model = "a" }},
  {{ name = "b", kind = "openai_chat", base_url = "{healthy}/v1", model = "b", weight = 0 }},
]
"""
        for name in ("cooldown", "window")
    )


@dataclass
class Pair:
    one: RunningServer
    two: RunningServer
    flaky: FakeUpstream
    healthy: FakeUpstream


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    tmp = tmp_path_factory.mktemp("shared")
    with FakeUpstream() as flaky, FakeUpstream(Reply.text("from b")) as healthy:
        catalog = tmp / "catalog.toml"
        catalog.write_text(_catalog(flaky.base_url, healthy.base_url))
        env = {
            "MODELPORT_CATALOG": str(catalog),
            "MODELPORT_REDIS_URL": REDIS_URL,
            "MODELPORT_RATELIMIT_PREFIX": "mp-test-share-" + secrets.token_hex(4),
            "MODELPORT_ROUTING__FAILURES_BEFORE_COOLDOWN": "2",
        }
        with run_server(tmp / "one", env=env) as one, run_server(tmp / "two", env=env) as two:
            yield Pair(one, two, flaky, healthy)


def _ask(server: RunningServer, model: str) -> str:
    assert server.demo_key is not None
    r = httpx.post(
        server.text_url + "/v1/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": "hi"}]},
        headers={"Authorization": f"Bearer {server.demo_key}"},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    return str(r.json()["choices"][0]["message"]["content"])


def test_a_cooldown_entered_in_one_process_is_honoured_by_another_within_a_second(pair: Pair) -> None:
    pair.flaky.reset()
    pair.flaky.push(Reply.error(429, "slow down", headers={"retry-after": "60"}))
    assert _ask(pair.one, "share/cooldown") == "from b"
    assert pair.flaky.call_count() == 1
    time.sleep(1.0)
    for _ in range(3):
        assert _ask(pair.two, "share/cooldown") == "from b"
    assert pair.flaky.call_count() == 1  # process two kept A out of rotation: it heard of the cooldown


def test_failures_in_two_processes_fill_one_window(pair: Pair) -> None:
    pair.flaky.reset()
    pair.flaky.push(Reply.error(500, "A broke"), Reply.error(500, "A broke"))
    assert _ask(pair.one, "share/window") == "from b"  # one failure here...
    assert _ask(pair.two, "share/window") == "from b"  # ...one there: 2 in the window, A cools
    time.sleep(1.0)
    for server in (pair.one, pair.two):
        assert _ask(server, "share/window") == "from b"
    assert pair.flaky.call_count() == 2  # neither process alone saw 2 failures
