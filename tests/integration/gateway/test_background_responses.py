"""Background Responses through a real `serve` with the official `openai` SDK (issue 43, item 5): created
`queued` at once, run on the task machinery, polled with `.retrieve`, streamed with `starting_after`,
cancelled (queued: never sent upstream, nothing billed; running: billed for what ran), `store: false`
refused, other teams' ids 404, refused with 402 at creation when the team cannot pay (and failed, unbilled,
when it can no longer pay by the time it runs), and a response whose `serve` is killed mid-run, or stopped
while its upstream request is still opening, completes after the restart, charged once."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.integration.gateway.conftest import ADMIN_TOKEN, CONFIG_TOML, Gateway, catalog_toml
from tests.support.databases import migrated_postgres_database
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.server import RunningServer, run_server

FINISHED = ("completed", "failed", "cancelled", "incomplete")
# 10 input and 5 output tokens at 1 and 2 micro-USD each.
USAGE = Usage(input_tokens=10, output_tokens=5)
COST_MICROS = 10 * 1 + 5 * 2


def _env(tmp: Path, upstream: FakeUpstream, **extra: str) -> dict[str, str]:
    (tmp / "catalog.toml").write_text(catalog_toml(upstream.base_url))
    (tmp / "config.toml").write_text(CONFIG_TOML)
    return {
        "MODELPORT_CATALOG": str(tmp / "catalog.toml"),
        "MODELPORT_CONFIG": str(tmp / "config.toml"),
        "MODELPORT_ADMIN_TOKEN": ADMIN_TOKEN,
        "FAKE_UPSTREAM_KEY": "sk-upstream-secret",
        "MODELPORT_RESPONSES__BACKGROUND_POLL_SECONDS": "0.1",
        # One background run at a time: a second response stays queued behind a slow first one.
        "MODELPORT_RESPONSES__BACKGROUND_CONCURRENCY": "1",
        "MODELPORT_TASKS__LEASE_SECONDS": "2",
        "MODELPORT_TASKS__RECONCILE_INTERVAL_SECONDS": "0.3",
        "MODELPORT_TASKS__REQUEUE_AFTER_SECONDS": "1",
        **extra,
    }


@pytest.fixture(scope="module")
def bg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("background")
    with FakeUpstream() as upstream, run_server(tmp, env=_env(tmp, upstream)) as server:
        assert server.demo_key is not None
        yield Gateway(server, upstream, server.demo_key)


@pytest.fixture
def gw(bg: Gateway) -> Gateway:
    bg.upstream.reset()
    return bg


def _client(gw: Gateway, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.server.text_url + "/v1", api_key=key, max_retries=0)


def _wait_status(client: openai.OpenAI, rid: str, wanted: tuple[str, ...], timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = client.responses.retrieve(rid)
        if got.status in wanted or time.monotonic() > deadline:
            assert got.status in wanted, got
            return got
        time.sleep(0.1)


def _charged(gw: Gateway, team: str, key: str) -> int:
    """Micro-USD the team's ledger charged (its `charge` entries), once nothing is frozen by a live process
    and the ledger has stood still for a second (settlements are written in batches). A killed process's
    credit reservation stays frozen until it is swept: it is no charge."""
    last: int | None = None
    since = time.monotonic()
    deadline = since + 20
    while time.monotonic() < deadline:
        entries = gw.admin("GET", f"/teams/{team}/ledger").json()["data"]["entries"]
        total: int = -sum(int(e["amount_micros"]) for e in entries if e["kind"] == "charge")
        if total != last:
            last, since = total, time.monotonic()
        elif time.monotonic() - since > 1.5:
            break
        time.sleep(0.1)
    assert last is not None
    return last


def test_created_queued_then_polled_to_completed_and_stored(gw: Gateway) -> None:
    key = gw.new_team("bg-poll")
    client = _client(gw, key)
    gw.upstream.push(Reply.text("Done in the background.", usage=USAGE, delay=0.5))
    created = client.responses.create(model="fake/chat", input="work on this", background=True)
    assert created.status == "queued" and created.background is True and created.id.startswith("resp_")
    assert created.output == []
    done = _wait_status(client, created.id, FINISHED)
    assert done.status == "completed" and done.id == created.id and done.background is True
    assert done.output_text == "Done in the background."
    # Stored like any response: its input items, and the next turn chains from it.
    items = client.responses.input_items.list(created.id)
    assert "work on this" in str(items.data[0].to_dict())
    gw.upstream.push(Reply.text("second"))
    client.responses.create(model="fake/chat", input="and then?", previous_response_id=created.id)
    last = gw.upstream.last_request
    assert last is not None and "Done in the background." in str(last.json)
    assert _charged(gw, "bg-poll", key) == COST_MICROS + 20  # the chained turn: 10 + 5 tokens by default usage


def test_streamed_from_a_sequence_number(gw: Gateway) -> None:
    client = gw.openai
    gw.upstream.push(Reply.text("one two three four", usage=USAGE))
    created = client.responses.create(model="fake/responses", input="stream me later", background=True)
    _wait_status(client, created.id, FINISHED)
    everything = list(client.responses.retrieve(created.id, stream=True))
    numbers = [e.sequence_number for e in everything]
    assert numbers == list(range(len(numbers))) and len(numbers) > 3
    assert everything[-1].type == "response.completed"
    assert everything[-1].response.id == created.id and everything[-1].response.background is True
    tail = list(client.responses.retrieve(created.id, stream=True, starting_after=2))
    assert [e.sequence_number for e in tail] == numbers[3:]
    assert [e.type for e in tail] == [e.type for e in everything[3:]]


def test_streamed_live_while_it_runs(gw: Gateway) -> None:
    client = gw.openai
    gw.upstream.push(Reply.text("slow words come one by one", usage=USAGE, chunk_delay=0.2))
    created = client.responses.create(model="fake/chat", input="take your time", background=True)
    events = list(client.responses.retrieve(created.id, stream=True))
    assert events[-1].type == "response.completed"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "slow words come one by one"
    # `background` and `stream` together: the creation itself streams the events.
    gw.upstream.push(Reply.text("at once", usage=USAGE))
    with client.responses.create(model="fake/chat", input="both", background=True, stream=True) as stream:
        kinds = [e.type for e in stream]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"


def test_cancel_queued_and_running(gw: Gateway) -> None:
    key = gw.new_team("bg-cancel")
    client = _client(gw, key)
    gw.upstream.push(Reply.text("a b c d e f g h i j k l m n o p", usage=USAGE, chunk_delay=0.5))
    calls = gw.upstream.call_count()
    running = client.responses.create(model="fake/chat", input="long one", background=True)
    _wait_status(client, running.id, ("in_progress",))
    waiting = client.responses.create(model="fake/chat", input="behind it", background=True)
    time.sleep(0.5)
    assert client.responses.retrieve(waiting.id).status == "queued"  # one run at a time (the setting)
    cancelled = client.responses.cancel(waiting.id)
    assert cancelled.status == "cancelled" and cancelled.id == waiting.id
    assert client.responses.cancel(waiting.id).status == "cancelled"  # again: the same answer
    time.sleep(2)  # the upstream's events arrive every 0.5 s: some have run
    stopped = client.responses.cancel(running.id)
    assert stopped.status == "cancelled"
    # The run stops within the poll interval; the queued one never reaches the upstream.
    time.sleep(1.5)
    assert client.responses.retrieve(running.id).status == "cancelled"
    assert client.responses.retrieve(waiting.id).status == "cancelled"
    assert gw.upstream.call_count() == calls + 1  # the running one's call only
    # The running one is billed for what it produced (its usage never came); the queued one for nothing.
    charged = _charged(gw, "bg-cancel", key)
    assert 0 < charged < COST_MICROS * 100, charged
    # A finished one cannot be cancelled; nor can a response that was not made in the background.
    gw.upstream.push(Reply.text("quick"))
    quick = client.responses.create(model="fake/chat", input="quick", background=True)
    _wait_status(client, quick.id, ("completed",))
    with pytest.raises(openai.BadRequestError):
        client.responses.cancel(quick.id)
    plain = client.responses.create(model="fake/chat", input="not in the background")
    with pytest.raises(openai.BadRequestError):
        client.responses.cancel(plain.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.cancel("resp_unknown")


def test_background_without_store_is_refused(gw: Gateway) -> None:
    calls = gw.upstream.call_count()
    with pytest.raises(openai.BadRequestError) as refused:
        gw.openai.responses.create(model="fake/chat", input="x", background=True, store=False)
    body = refused.value.body
    assert isinstance(body, dict) and body["param"] == "store" and body["type"] == "invalid_request_error"
    # Checked like any request before it is kept: an unknown model or previous response is refused at once.
    with pytest.raises(openai.NotFoundError):
        gw.openai.responses.create(model="fake/nothing", input="x", background=True)
    with pytest.raises(openai.NotFoundError):
        gw.openai.responses.create(model="fake/chat", input="x", background=True, previous_response_id="resp_none")
    assert gw.upstream.call_count() == calls


def test_another_teams_background_response_is_404(gw: Gateway) -> None:
    gw.upstream.push(Reply.text("mine", delay=1))
    mine = gw.openai.responses.create(model="fake/chat", input="mine", background=True)
    other = _client(gw, gw.new_team("bg-other"))
    with pytest.raises(openai.NotFoundError):
        other.responses.retrieve(mine.id)
    with pytest.raises(openai.NotFoundError):
        other.responses.cancel(mine.id)
    streamed = httpx.get(
        f"{gw.server.text_url}/v1/responses/{mine.id}?stream=true",
        headers={"Authorization": f"Bearer {other.api_key}"},
    )
    assert streamed.status_code == 404
    with pytest.raises(openai.NotFoundError):
        other.responses.delete(mine.id)
    assert _wait_status(gw.openai, mine.id, FINISHED).status == "completed"


def _make_team(server: RunningServer, name: str) -> str:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    admin = server.media_url + "/admin/v1"
    assert httpx.post(admin + "/teams", json={"name": name}, headers=headers).status_code == 200
    assert httpx.post(f"{admin}/teams/{name}/topups", json={"amount_usd": "10"}, headers=headers).status_code == 200
    key: str = httpx.post(f"{admin}/teams/{name}/keys", json={}, headers=headers).json()["data"]["key"]
    return key


def test_a_response_survives_a_killed_serve_and_is_charged_once(tmp_path: Path) -> None:
    with FakeUpstream() as upstream:
        env = _env(tmp_path, upstream)
        # The first attempt's upstream answers slowly: the process dies while it streams.
        upstream.push(Reply.text("never finished " * 10, usage=USAGE, chunk_delay=0.5))
        upstream.push(Reply.text("finished after the restart", usage=USAGE))
        with run_server(tmp_path, env=env) as server:
            key = _make_team(server, "bg-crash")
            client = openai.OpenAI(base_url=server.text_url + "/v1", api_key=key, max_retries=0)
            created = client.responses.create(model="fake/chat", input="survive", background=True)
            _wait_status(client, created.id, ("in_progress",))
            # Killed once some of its events are kept (the stream is live: read its first one only).
            with client.responses.retrieve(created.id, stream=True, starting_after=3) as live:
                first = next(iter(live))
            assert first.sequence_number == 4
            server.stop(signal.SIGKILL)
        with run_server(tmp_path, env=env) as server:
            client = openai.OpenAI(base_url=server.text_url + "/v1", api_key=key, max_retries=0)
            done = _wait_status(client, created.id, FINISHED, timeout=60)
            assert done.status == "completed", done
            assert done.output_text == "finished after the restart"
            events = list(client.responses.retrieve(created.id, stream=True))
            # The first attempt's events are gone; the second's are numbered above every number it gave,
            # so the client that saw 4 resumes after it and gets the new attempt from its start.
            numbers = [e.sequence_number for e in events]
            assert numbers == list(range(numbers[0], numbers[0] + len(numbers))) and numbers[0] > 4, numbers
            assert events[0].type == "response.created" and events[-1].type == "response.completed"
            assert "never finished" not in "".join(getattr(e, "delta", "") for e in events)
            resumed = list(client.responses.retrieve(created.id, stream=True, starting_after=4))
            assert [e.sequence_number for e in resumed] == numbers
            assert [e.type for e in resumed] == [e.type for e in events]
            assert upstream.call_count() == 2
            gw = Gateway(server, upstream, key)
            assert _charged(gw, "bg-crash", key) == COST_MICROS
            logs = httpx.get(
                server.text_url + "/v1/logs",
                params={"start_time": int(time.time()) - 3600, "end_time": int(time.time()) + 60},
                headers={"Authorization": f"Bearer {key}"},
            ).json()["requests"]
            assert len(logs) == 1 and logs[0]["status"] == "success", logs


def _on_postgres(tmp_path: Path, database_url: str) -> None:
    with FakeUpstream() as upstream:
        env = _env(tmp_path, upstream, MODELPORT_DATABASE_URL=database_url)
        upstream.push(Reply.text("from the shared queue", usage=USAGE, delay=0.3))
        with run_server(tmp_path, "--workers", "2", env=env) as server:
            key = _make_team(server, "bg-postgres")
            client = openai.OpenAI(base_url=server.text_url + "/v1", api_key=key, max_retries=0)
            created = client.responses.create(model="fake/chat", input="on postgres", background=True)
            assert created.status == "queued"
            done = _wait_status(client, created.id, FINISHED)
            assert done.status == "completed" and done.output_text == "from the shared queue"
            events = list(client.responses.retrieve(created.id, stream=True, starting_after=0))
            assert events[0].sequence_number == 1 and events[-1].type == "response.completed"
            # A running one cancelled through whichever process answers, before its upstream said anything.
            upstream.push(Reply.text("slow", usage=USAGE, delay=3))
            slow = client.responses.create(model="fake/chat", input="slow", background=True)
            _wait_status(client, slow.id, ("in_progress",))
            assert client.responses.cancel(slow.id).status == "cancelled"
            assert _wait_status(client, slow.id, FINISHED).status == "cancelled"
            assert upstream.call_count() == 2
            # The completed one at its usage; the cancelled one for the input it sent (the gateway's estimate of
            # its few tokens: no output, no usage came).
            charged = _charged(Gateway(server, upstream, key), "bg-postgres", key)
            assert COST_MICROS < charged < COST_MICROS + 30, charged


def test_on_postgresql_with_two_processes(tmp_path: Path) -> None:
    """The queue is PostgreSQL's (shared by both serving processes); any process answers polls and cancels."""

    async def run() -> None:
        async with migrated_postgres_database() as database_url:
            await asyncio.to_thread(_on_postgres, tmp_path, database_url)

    asyncio.run(run())


def _row_status(data_dir: Path, rid: str) -> str:
    """The background response's status in the SQLite database of a stopped `serve`."""
    with sqlite3.connect(data_dir / "modelport.db") as db:
        (status,) = db.execute("SELECT status FROM background_responses WHERE id = ?", (rid,)).fetchone()
    return str(status)


def _request_logs(server: RunningServer, key: str) -> list[dict[str, Any]]:
    logs: list[dict[str, Any]] = httpx.get(
        server.text_url + "/v1/logs",
        params={"start_time": int(time.time()) - 3600, "end_time": int(time.time()) + 60},
        headers={"Authorization": f"Bearer {key}"},
    ).json()["requests"]
    return logs


def test_a_shutdown_while_the_upstream_opens_is_not_a_cancel(tmp_path: Path) -> None:
    """SIGTERM while the attempt waits for its upstream's first byte: the attempt is released unbilled (the
    response queued again, not cancelled) and the attempt after the restart is the one charged."""
    with FakeUpstream() as upstream:
        env = _env(tmp_path, upstream, MODELPORT_SERVER__GRACEFUL_SHUTDOWN_SECONDS="1")
        upstream.push(Reply.text("never sent", usage=USAGE, delay=20))  # nothing comes before the shutdown
        upstream.push(Reply.text("finished after the restart", usage=USAGE))
        with run_server(tmp_path, env=env) as server:
            key = _make_team(server, "bg-term")
            client = openai.OpenAI(base_url=server.text_url + "/v1", api_key=key, max_retries=0)
            created = client.responses.create(model="fake/chat", input="survive a restart", background=True)
            deadline = time.monotonic() + 30
            while upstream.call_count() < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert upstream.call_count() == 1  # the attempt is opening its upstream request
            assert client.responses.retrieve(created.id).status == "in_progress"
            assert server.stop(signal.SIGTERM) == 0
        assert _row_status(tmp_path, created.id) == "queued"  # released for the next process, not cancelled
        with run_server(tmp_path, env=env) as server:
            client = openai.OpenAI(base_url=server.text_url + "/v1", api_key=key, max_retries=0)
            done = _wait_status(client, created.id, FINISHED, timeout=60)
            assert done.status == "completed", done
            assert done.output_text == "finished after the restart"
            assert upstream.call_count() == 2
            assert _charged(Gateway(server, upstream, key), "bg-term", key) == COST_MICROS
            logs = _request_logs(server, key)
            assert len(logs) == 1 and logs[0]["status"] == "success", logs


def test_refused_with_402_at_creation_when_the_team_cannot_pay(gw: Gateway) -> None:
    """No balance: the POST answers 402 as a request answered at once would, and nothing is kept or run."""
    key = gw.new_team("bg-broke", usd=None)
    client = _client(gw, key)
    calls = gw.upstream.call_count()
    with pytest.raises(openai.APIStatusError) as refused:
        client.responses.create(model="fake/chat", input="no money", background=True)
    assert refused.value.status_code == 402
    body = refused.value.body
    assert isinstance(body, dict) and body["code"] == "insufficient_quota", body
    with pytest.raises(openai.APIStatusError) as streamed:
        client.responses.create(model="fake/chat", input="no money", background=True, stream=True)
    assert streamed.value.status_code == 402
    # Answered at once, the same.
    with pytest.raises(openai.APIStatusError) as foreground:
        client.responses.create(model="fake/chat", input="no money")
    assert foreground.value.status_code == 402
    time.sleep(1)  # a kept response would have run by now (poll 0.1 s, requeue 1 s)
    assert gw.upstream.call_count() == calls
    # A paying team's creation carries its rate-limit headers, as a request answered at once does.
    paying = gw.new_team("bg-paying")
    answer = httpx.post(
        gw.server.text_url + "/v1/responses",
        json={"model": "fake/chat", "input": "x", "background": True},
        headers={"Authorization": f"Bearer {paying}"},
    )
    assert answer.status_code == 200 and "x-ratelimit-limit" in answer.headers, answer.headers
    assert _wait_status(_client(gw, paying), answer.json()["id"], FINISHED).status == "completed"


def test_rate_limits_at_creation_counted_once_and_no_concurrency_slot(gw: Gateway) -> None:
    """A team of 3 requests a minute and 1 in flight: a creation counts one of its requests (its run not
    again), the fourth at once is a 429 on the POST; a creation while its only slot is busy waits queued."""
    key = gw.new_team("bg-tiny")
    assert gw.admin("PUT", "/teams/bg-tiny/tier", json={"tier": "tiny"}).status_code == 200
    client = _client(gw, key)
    gw.upstream.push(Reply.text("a b c d e f", usage=USAGE, chunk_delay=0.3))
    calls = gw.upstream.call_count()
    first = client.responses.create(model="fake/chat", input="one", background=True)
    deadline = time.monotonic() + 30
    while gw.upstream.call_count() == calls and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gw.upstream.call_count() == calls + 1  # its run (admitted: it holds the team's only slot) streams
    second = client.responses.create(model="fake/chat", input="two", background=True)
    third = client.responses.create(model="fake/chat", input="three", background=True)
    with pytest.raises(openai.RateLimitError) as limited:
        client.responses.create(model="fake/chat", input="four", background=True)
    body = limited.value.body
    assert isinstance(body, dict) and body["type"] == "rate_limit_exceeded", body
    assert limited.value.response.headers["x-ratelimit-limit"] == "3"
    # Polled as a team of the first tier (the tiny one's 2 queries a minute would not do; the runs may see
    # either tier, the key's context is cached for a few seconds).
    assert gw.admin("PUT", "/teams/bg-tiny/tier", json={"tier": "free"}).status_code == 200
    for created in (first, second, third):
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(openai.RateLimitError):
                status = client.responses.retrieve(created.id).status
                if status in FINISHED:
                    break
            assert time.monotonic() < deadline, created.id
            time.sleep(0.2)
        assert status == "completed", created.id


def test_a_run_that_can_no_longer_pay_fails_unbilled(tmp_path: Path) -> None:
    """The balance is checked again when the run starts: gone by then (here the key's spend limit is cut
    while the response waits behind another), the response fails with the reason and is not billed."""
    with FakeUpstream() as upstream:
        env = _env(tmp_path, upstream, MODELPORT_AUTH_CACHE_SECONDS="0")
        with run_server(tmp_path, env=env) as server:
            gw = Gateway(server, upstream, "")
            busy = _client(gw, _make_team(server, "bg-busy"))
            upstream.push(Reply.text("a b c d e f g h", usage=USAGE, chunk_delay=0.4))
            first = busy.responses.create(model="fake/chat", input="hold the only run", background=True)
            _wait_status(busy, first.id, ("in_progress",))
            assert gw.admin("POST", "/teams", json={"name": "bg-limited"}).status_code == 200
            assert gw.admin("POST", "/teams/bg-limited/topups", json={"amount_usd": "10"}).status_code == 200
            made = gw.admin("POST", "/teams/bg-limited/keys", json={"spend_limit_usd": "5"}).json()["data"]
            client = _client(gw, made["key"])
            waiting = client.responses.create(model="fake/chat", input="wait your turn", background=True)
            assert waiting.status == "queued"
            cut = gw.admin("PATCH", f"/keys/{made['id']}", json={"spend_limit_usd": "0.000001"})
            assert cut.status_code == 200, cut.text
            failed = _wait_status(client, waiting.id, FINISHED, timeout=60)
            assert failed.status == "failed", failed
            assert failed.error is not None and failed.error.code == "key_budget_exceeded", failed.error
            assert "spend limit" in failed.error.message
            assert _wait_status(busy, first.id, FINISHED).status == "completed"
            assert upstream.call_count() == 1  # the failed one never reached the upstream
            assert _charged(gw, "bg-limited", made["key"]) == 0
