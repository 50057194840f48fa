"""Long-lived task requests through a real `modelport serve` (issue 33 items 6 and 8): a live status stream
(`GET /api/v1/tasks/{id}/events`) or a `Prefer: wait` creation ends once its key is revoked or expires or its
team is suspended (re-checked every auth cache period, 1 s here; the revocations go through the CLI, another
process, so nothing evicts the server's cache at once), and a team holds at most
`MODELPORT_TASKS__MAX_STREAMS_PER_TEAM` (3 here) of them open at once (429 past it, nothing created).

The server runs no task workers: every task stays queued, so a stream or a wait lasts until the test ends it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from tests.integration.tasks.helpers import SKETCH, Team, admin, free_port, make_team, task_env, task_server
from tests.support.server import RunningServer

MAX_STREAMS = 3
# A stream that outlives its key by more than this is a failure (the bound is 2 s: cache plus re-check).
ENDS_WITHIN_SECONDS = 30


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    env = task_env(
        None,
        free_port(),
        MODELPORT_TASKS__RUN_WORKERS="false",
        MODELPORT_AUTH_CACHE_SECONDS="1",
        MODELPORT_TASKS__EVENTS_KEEPALIVE_SECONDS="1",
        MODELPORT_TASKS__MAX_STREAMS_PER_TEAM=str(MAX_STREAMS),
    )
    with task_server(tmp_path_factory.mktemp("streams"), env) as running:
        yield running


def _task(server: RunningServer, team: Team) -> str:
    made = httpx.post(server.media_url + SKETCH, json={"prompt": "p"}, headers=team.headers, timeout=30)
    assert made.status_code == 200, made.text
    task_id: str = made.json()["data"]["task_id"]
    return task_id


def _key(server: RunningServer, team: Team, **fields: Any) -> tuple[Team, str]:
    made = admin(server, "POST", f"/teams/{team.name}/keys", fields)
    return Team(id=team.id, name=team.name, key=made["key"]), made["id"]


def _events_url(server: RunningServer, task_id: str) -> str:
    return f"{server.media_url}/api/v1/tasks/{task_id}/events"


def _follow_until_it_ends(server: RunningServer, team: Team, task_id: str, end_it: Any) -> list[str]:
    """Open the stream, call `end_it()` once the first event arrived, and read until the server closes the
    stream; the lines read after `end_it()`. Fails if the stream is still open `ENDS_WITHIN_SECONDS` later."""
    after: list[str] = []
    ended_at: float | None = None
    with httpx.stream("GET", _events_url(server, task_id), headers=team.headers, timeout=60) as stream:
        assert stream.status_code == 200
        for line in stream.iter_lines():
            if ended_at is None:
                if line.startswith("data: "):
                    end_it()
                    ended_at = time.monotonic()
                continue
            after.append(line)
            if time.monotonic() - ended_at > ENDS_WITHIN_SECONDS:
                raise AssertionError(f"the stream outlived its key by {ENDS_WITHIN_SECONDS} s: {after[-5:]}")
    assert ended_at is not None
    return after


def _ended_with_401(after: list[str]) -> None:
    events = [line for line in after if line.startswith("event: ")]
    assert events == ["event: error"], after
    data = [json.loads(line.removeprefix("data: ")) for line in after if line.startswith("data: ")]
    assert data == [{"code": 401, "message": "Authentication failed: invalid team"}], after


def test_a_stream_ends_when_its_key_is_revoked(server: RunningServer) -> None:
    owner = make_team(server, "revoked-watchers", topup_usd="1")
    task_id = _task(server, owner)
    watcher, key_id = _key(server, owner)
    after = _follow_until_it_ends(
        server, watcher, task_id, lambda: server.cli("admin", "key", "revoke", key_id).check_returncode()
    )
    _ended_with_401(after)
    # The task is untouched, and the owner's own key still follows it.
    with httpx.stream("GET", _events_url(server, task_id), headers=owner.headers, timeout=60) as stream:
        assert stream.status_code == 200


def test_a_stream_ends_when_its_key_expires(server: RunningServer) -> None:
    owner = make_team(server, "expiring-watchers", topup_usd="1")
    task_id = _task(server, owner)
    expires_at = int(time.time()) + 3
    watcher, _ = _key(server, owner, expires_at=expires_at)
    after = _follow_until_it_ends(server, watcher, task_id, lambda: None)
    _ended_with_401(after)
    assert time.time() >= expires_at


def test_a_stream_ends_when_its_team_is_suspended(server: RunningServer) -> None:
    owner = make_team(server, "suspended-watchers", topup_usd="1")
    task_id = _task(server, owner)
    after = _follow_until_it_ends(
        server, owner, task_id, lambda: server.cli("admin", "team", "suspend", owner.name).check_returncode()
    )
    _ended_with_401(after)


def test_a_prefer_wait_ends_with_401_when_its_key_is_revoked(server: RunningServer) -> None:
    owner = make_team(server, "revoked-waiters", topup_usd="1")
    waiter, key_id = _key(server, owner)
    answer: list[httpx.Response] = []

    def wait() -> None:
        headers = {**waiter.headers, "Prefer": "wait=60"}
        answer.append(httpx.post(server.media_url + SKETCH, json={"prompt": "p"}, headers=headers, timeout=90))

    thread = threading.Thread(target=wait)
    thread.start()
    _wait_until(lambda: _tasks_of(server, owner) == 1, "the waiting creation's task")
    server.cli("admin", "key", "revoke", key_id).check_returncode()
    thread.join(ENDS_WITHIN_SECONDS)
    assert not thread.is_alive(), "the wait outlived its key"
    assert answer[0].status_code == 401, answer[0].text


def test_a_team_holds_at_most_max_streams_open(server: RunningServer) -> None:
    team = make_team(server, "hoarders", topup_usd="1")
    other = make_team(server, "neighbours", topup_usd="1")
    task_id = _task(server, team)
    with ExitStack() as stack:
        for _ in range(MAX_STREAMS - 1):
            stream = stack.enter_context(
                httpx.stream("GET", _events_url(server, task_id), headers=team.headers, timeout=60)
            )
            assert stream.status_code == 200
        # A waiting creation holds the last place (in a thread: it answers when the wait ends).
        waited: list[httpx.Response] = []
        waiting = threading.Thread(
            target=lambda: waited.append(
                httpx.post(
                    server.media_url + SKETCH,
                    json={"prompt": "p"},
                    headers={**team.headers, "Prefer": "wait=60"},
                    timeout=90,
                )
            )
        )
        waiting.start()
        _wait_until(lambda: _tasks_of(server, team) == 2, "the waiting creation's task")

        with httpx.stream("GET", _events_url(server, task_id), headers=team.headers, timeout=30) as refused:
            assert refused.status_code == 429, "a stream past the cap was opened"
            refused.read()
            assert f"already holds {MAX_STREAMS} live status streams" in refused.json()["message"]
        refused_wait = httpx.post(
            server.media_url + SKETCH, json={"prompt": "p"}, headers={**team.headers, "Prefer": "wait=5"}, timeout=30
        )
        assert refused_wait.status_code == 429 and "live status streams" in refused_wait.json()["message"]
        assert _tasks_of(server, team) == 2  # the refused wait created nothing
        # A creation that does not wait, and another team's stream, are not held up.
        other_task = _task(server, other)
        with httpx.stream("GET", _events_url(server, other_task), headers=other.headers, timeout=60) as theirs:
            assert theirs.status_code == 200

        # Ending the wait (the task is cancelled) gives its place back.
        waited_task = _newest_task(server, team)
        cancel = httpx.post(f"{server.media_url}/api/v1/tasks/{waited_task}/cancel", headers=team.headers, timeout=30)
        assert cancel.status_code == 200, cancel.text
        waiting.join(60)
        assert waited[0].status_code == 200 and waited[0].json()["data"]["status"] == "cancelled"
        with httpx.stream("GET", _events_url(server, task_id), headers=team.headers, timeout=60) as again:
            assert again.status_code == 200
    # Closing the streams gives their places back too (the server notices the client has gone).
    _wait_until(lambda: _statuses_at_once(server, team, task_id) == [200] * MAX_STREAMS, "every place back")


def _statuses_at_once(server: RunningServer, team: Team, task_id: str) -> list[int]:
    """The statuses of `MAX_STREAMS` streams opened together (all closed again on return)."""
    with ExitStack() as stack:
        return [
            stack.enter_context(
                httpx.stream("GET", _events_url(server, task_id), headers=team.headers, timeout=60)
            ).status_code
            for _ in range(MAX_STREAMS)
        ]


def _tasks_of(server: RunningServer, team: Team) -> int:
    listed = httpx.get(f"{server.media_url}/api/v1/tasks", headers=team.headers, timeout=30)
    assert listed.status_code == 200, listed.text
    total: int = listed.json()["data"]["total"]
    return total


def _newest_task(server: RunningServer, team: Team) -> str:
    listed = httpx.get(f"{server.media_url}/api/v1/tasks", headers=team.headers, timeout=30).json()["data"]
    task_id: str = listed["tasks"][0]["task_id"]
    return task_id


def _wait_until(condition: Any, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")
