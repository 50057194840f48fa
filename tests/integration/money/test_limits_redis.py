"""One team's rate limit holds across two server processes sharing one Redis (127.0.0.1:6379, or
MODELPORT_TEST_REDIS_URL). Unreachable Redis fails the test."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import httpx
import redis

from tests.integration.money.helpers import admin, server, team_with_key, write_config
from tests.support.fake_upstream import FakeUpstream, Reply

REDIS_URL = os.environ.get("MODELPORT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def test_inference_rpm_is_shared_by_two_server_processes(tmp_path: Path) -> None:
    redis.Redis.from_url(REDIS_URL, socket_connect_timeout=5).ping()  # fail loudly if Redis is missing
    with FakeUpstream(Reply.text("ok")) as up:
        env = write_config(tmp_path, up)
        env.update({"MODELPORT_REDIS_URL": REDIS_URL, "MODELPORT_RATELIMIT_PREFIX": "mp-test-" + secrets.token_hex(4)})
        with server(tmp_path, env) as first, server(tmp_path, env) as second:
            key = team_with_key(first, "shared", "1")
            assert admin(first, "PUT", "/teams/shared/tier", json={"tier": "tiny"}).status_code == 200
            body = {"model": "fake/priced", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
            auth = {"Authorization": f"Bearer {key}"}
            codes = []
            for i in range(10):
                target = first if i % 2 == 0 else second
                r = httpx.post(target.text_url + "/v1/chat/completions", json=body, headers=auth, timeout=30)
                codes.append(r.status_code)
                if r.status_code == 429:
                    assert r.json()["error"]["type"] == "rate_limit_exceeded"
                    assert r.headers["x-ratelimit-limit"] == "5"
            # RPM 5 for the team, whichever process answers: exactly five pass in a quick burst.
            assert codes.count(200) == 5, codes
            assert codes.count(429) == 5, codes


def test_without_redis_each_process_counts_alone(tmp_path: Path) -> None:
    """The embedded default (no Redis) keeps limits in process: documents why Redis is needed when scaling."""
    with FakeUpstream(Reply.text("ok")) as up:
        env = write_config(tmp_path, up)
        with server(tmp_path, env) as first, server(tmp_path, env) as second:
            key = team_with_key(first, "alone", "1")
            assert admin(first, "PUT", "/teams/alone/tier", json={"tier": "tiny"}).status_code == 200
            body = {"model": "fake/priced", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
            auth = {"Authorization": f"Bearer {key}"}
            codes = [
                httpx.post(s.text_url + "/v1/chat/completions", json=body, headers=auth, timeout=30).status_code
                for s in (first, second) * 5
            ]
            assert codes.count(200) == 10
