"""The cache's rules through a real `serve` (SQLite, and PostgreSQL with Redis): every control header, TTL
expiry, eviction under the size bound, nothing stored from an error, a cut stream, a cancelled request or
(unless the team says so) a tool call; a hit's price and log row, its place in the RPM; purges."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

import httpx
import pytest

from tests.integration.response_cache.asking import Got, ask
from tests.integration.response_cache.conftest import HIT_PRICE_SHARE, Cached
from tests.support.fake_upstream import Reply, Usage


def _prompt() -> str:
    return "question " + secrets.token_hex(6)


def _until_hit(srv: Cached, key: str, prompt: str, *, text: str | None = None, model: str = "fake/chat") -> Got:
    """Ask until the answer (with `text`, when given) is served from the cache: stores run in the background."""
    deadline = time.monotonic() + 5
    while True:
        got = ask(srv, key, "chat", model, prompt)
        if got.cache == "hit" and (text is None or got.text == text):
            return got
        assert time.monotonic() < deadline, got
        time.sleep(0.1)


def _raw(srv: Cached, key: str, prompt: str, headers: dict[str, str] | None = None, **kw: Any) -> httpx.Response:
    body = {"model": "fake/chat", "messages": [{"role": "user", "content": prompt}]}
    return httpx.post(
        srv.server.text_url + "/v1/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {key}", **(headers or {})},
        timeout=kw.pop("timeout", 30),
        **kw,
    )


def test_skip_refresh_and_cache_control(srv: Cached) -> None:
    _, key = srv.team()
    prompt = _prompt()
    skipped = ask(srv, key, "chat", "fake/chat", prompt, headers={"X-Modelport-Cache": "skip"})
    assert skipped.cache == "skip"
    time.sleep(0.3)
    assert ask(srv, key, "chat", "fake/chat", prompt).cache == "miss"  # `skip` stored nothing
    _until_hit(srv, key, prompt)
    assert ask(srv, key, "chat", "fake/chat", prompt, headers={"X-Modelport-Cache": "skip"}).cache == "skip"
    calls = srv.upstream.call_count()
    srv.upstream.push(Reply.text("a fresh answer"))
    refreshed = ask(srv, key, "chat", "fake/chat", prompt, headers={"X-Modelport-Cache": "refresh"})
    assert refreshed.cache == "miss" and refreshed.text == "a fresh answer"
    assert srv.upstream.call_count() == calls + 1
    _until_hit(srv, key, prompt, text="a fresh answer")  # `refresh` stored the new answer
    assert _raw(srv, key, prompt, {"Cache-Control": "no-store"}).headers["x-modelport-cache"] == "skip"
    srv.upstream.push(Reply.text("fresher still"))
    no_cache = _raw(srv, key, prompt, {"Cache-Control": "no-cache"})
    assert no_cache.headers["x-modelport-cache"] == "miss" and "fresher still" in no_cache.text
    _until_hit(srv, key, prompt, text="fresher still")
    bad = _raw(srv, key, prompt, {"X-Modelport-Cache": "sometimes"})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
    bad_ttl = _raw(srv, key, prompt, {"X-Modelport-Cache-TTL": "soon"})
    assert bad_ttl.status_code == 400


def test_an_entry_expires_after_its_ttl_in_seconds(srv: Cached) -> None:
    _, key = srv.team()
    prompt = _prompt()
    stored_at = time.monotonic()
    assert ask(srv, key, "chat", "fake/chat", prompt, headers={"X-Modelport-Cache-TTL": "2"}).cache == "miss"
    _until_hit(srv, key, prompt)  # reads do not extend it
    time.sleep(max(0.0, stored_at + 2.5 - time.monotonic()))
    assert ask(srv, key, "chat", "fake/chat", prompt).cache == "miss"


def test_eviction_keeps_the_store_under_its_size_bound(srv: Cached) -> None:
    _, key = srv.team()
    big = "x" * 10_000  # eight of these pass the server's 0.05 MB bound
    prompts = [_prompt() for _ in range(8)]
    for prompt in prompts:
        srv.upstream.push(Reply.text(big))
        assert ask(srv, key, "chat", "fake/chat", prompt).cache == "miss"
        _until_hit(srv, key, prompt)
    assert ask(srv, key, "chat", "fake/chat", prompts[-1]).cache == "hit"
    assert ask(srv, key, "chat", "fake/chat", prompts[0]).cache == "miss"  # least recently used: gone


def _fails(srv: Cached, key: str, prompt: str, stream: bool) -> None:
    """Ask, expecting the SDK's error (a failed answer, or a stream that ends in an error event)."""
    try:
        ask(srv, key, "chat", "fake/chat", prompt, stream=stream)
    except Exception:  # the SDK's error is what is expected here
        return


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
def test_nothing_is_stored_from_an_error_or_a_cut_stream(srv: Cached, stream: bool) -> None:
    _, key = srv.team()
    failures = [Reply.error(500), Reply.error(400, "bad request")]
    if stream:
        failures += [Reply.drop(after_events=2), Reply(error_after=2)]
    for failure in failures:
        prompt = _prompt()
        srv.upstream.push(failure)
        _fails(srv, key, prompt, stream)
        time.sleep(0.3)
        calls = srv.upstream.call_count()
        assert ask(srv, key, "chat", "fake/chat", prompt, stream=stream).cache == "miss", failure
        assert srv.upstream.call_count() == calls + 1


def test_nothing_is_stored_from_a_cancelled_request(srv: Cached) -> None:
    _, key = srv.team()
    prompt = _prompt()
    srv.upstream.push(Reply.text("too late", delay=1.5))
    with pytest.raises(httpx.ReadTimeout):
        _raw(srv, key, prompt, timeout=0.5)
    streamed = _prompt()
    srv.upstream.push(Reply.text("one two three four five six seven", chunk_delay=0.3))
    body = {"model": "fake/chat", "stream": True, "messages": [{"role": "user", "content": streamed}]}
    with httpx.stream(
        "POST",
        srv.server.text_url + "/v1/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    ) as reply:
        next(reply.iter_lines())  # the first event, then the client goes
    time.sleep(2.5)
    assert ask(srv, key, "chat", "fake/chat", prompt).cache == "miss"
    assert ask(srv, key, "chat", "fake/chat", streamed, stream=True).cache == "miss"


@pytest.mark.parametrize("protocol", ["chat", "responses", "messages"])
def test_tool_calls_are_stored_only_when_the_team_says_so(srv: Cached, protocol: str) -> None:
    call = Reply.tool_call("get_weather", {"city": "Oslo"}, call_id="call_1")
    _, plain = srv.team()
    prompt = _prompt()
    srv.upstream.push(call, call)
    assert ask(srv, plain, protocol, "fake/chat", prompt).tool_calls == 1
    time.sleep(0.3)
    again = ask(srv, plain, protocol, "fake/chat", prompt)
    assert again.cache == "miss" and again.tool_calls == 1
    _, tools = srv.team(tool_calls=True)
    srv.upstream.push(call)
    assert ask(srv, tools, protocol, "fake/chat", prompt).cache == "miss"
    deadline = time.monotonic() + 5
    while (hit := ask(srv, tools, protocol, "fake/chat", prompt, stream=True)).cache != "hit":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert hit.tool_calls == 1


def _logs(srv: Cached, key: str, count: int) -> list[dict[str, Any]]:
    now = int(time.time())
    deadline = time.monotonic() + 10
    while True:
        page = httpx.get(
            srv.server.text_url + "/v1/logs",
            params={"start_time": now - 600, "end_time": now + 600, "page_size": 100},
            headers={"Authorization": f"Bearer {key}"},
            timeout=30,
        ).json()
        rows: list[dict[str, Any]] = page["requests"]
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        time.sleep(0.2)


def test_a_hit_costs_its_share_and_is_logged_apart(srv: Cached) -> None:
    _, key = srv.team()
    prompt = _prompt()
    srv.upstream.push(Reply.text("priced", usage=Usage(input_tokens=100, output_tokens=50)))
    miss = _raw(srv, key, prompt)
    assert miss.headers["x-modelport-cache"] == "miss"
    cost = miss.headers["x-modelport-cost"]  # 100 × 1 + 50 × 2 micro-USD
    assert float(cost) == pytest.approx(0.0002)
    deadline = time.monotonic() + 5
    while (hit := _raw(srv, key, prompt)).headers["x-modelport-cache"] != "hit":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert float(hit.headers["x-modelport-cost"]) == pytest.approx(0.0002 * float(HIT_PRICE_SHARE))
    assert hit.json()["usage"]["prompt_tokens"] == 100  # the usage served
    rows = {row["cache"]: row for row in _logs(srv, key, 2)}
    assert set(rows) >= {"hit", "miss"}
    assert rows["hit"]["prompt_tokens"] == 100 and rows["hit"]["completion_tokens"] == 50
    assert float(rows["hit"]["cost"]) == pytest.approx(0.0001)
    assert float(rows["hit"]["cache_saved"]) == pytest.approx(0.0001)
    assert float(rows["miss"]["cost"]) == pytest.approx(0.0002) and rows["miss"]["cache_saved"] is None


def test_hits_count_toward_the_requests_per_minute(srv: Cached) -> None:
    team, key = srv.team()
    assert srv.admin("PUT", f"/teams/{team}/tier", json={"tier": "tiny"}).status_code == 200  # 3 per minute
    prompt = _prompt()
    codes = [_raw(srv, key, prompt).status_code]
    time.sleep(0.5)
    codes += [(r := _raw(srv, key, prompt)).status_code for _ in range(3)]
    assert codes == [200, 200, 200, 429], codes
    assert r.json()["error"]["type"] == "rate_limit_exceeded"


def test_purges_by_team_admin_operator_and_turning_it_off(srv: Cached) -> None:
    team, member = srv.team()
    admin_key = srv.key(team, "admin")
    prompt = _prompt()
    ask(srv, member, "chat", "fake/chat", prompt)
    _until_hit(srv, member, prompt)
    purge = srv.server.media_url + "/api/v1/cache"
    refused = httpx.delete(purge, headers={"Authorization": f"Bearer {member}"}, timeout=30)
    assert refused.status_code == 403 and refused.json()["code"] == 403
    assert refused.json()["message"].startswith("Forbidden")
    assert ask(srv, member, "chat", "fake/chat", prompt).cache == "hit"
    purged = httpx.delete(purge, headers={"Authorization": f"Bearer {admin_key}"}, timeout=30)
    assert purged.status_code == 200 and purged.json()["data"]["entries_purged"] == 1
    assert ask(srv, member, "chat", "fake/chat", prompt).cache == "miss"
    _until_hit(srv, member, prompt)
    by_operator = srv.admin("DELETE", f"/teams/{team}/cache")
    assert by_operator.status_code == 200 and by_operator.json()["data"]["entries_purged"] == 1
    assert ask(srv, member, "chat", "fake/chat", prompt).cache == "miss"
    _until_hit(srv, member, prompt)
    assert srv.admin("PATCH", f"/teams/{team}", json={"cache": "off"}).json()["data"]["cache"] == "off"
    assert ask(srv, member, "chat", "fake/chat", prompt).cache is None
    assert srv.admin("PATCH", f"/teams/{team}", json={"cache": "team"}).status_code == 200
    assert ask(srv, member, "chat", "fake/chat", prompt).cache == "miss"  # turning it off purged it
    assert srv.admin("PATCH", f"/teams/{team}", json={"cache": "always"}).status_code == 400


def test_the_cli_sets_the_cache_and_turning_it_off_purges(srv: Cached) -> None:
    team, key = srv.team("off")
    prompt = _prompt()
    done = srv.server.cli("admin", "team", "set", team, "--cache", "key", "--cache-tool-calls", "on", "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["cache"] == "key" and shown["cache_tool_calls"] is True
    assert ask(srv, key, "chat", "fake/chat", prompt).cache == "miss"
    _until_hit(srv, key, prompt)
    off = srv.server.cli("admin", "team", "set", team, "--cache", "off")
    assert off.returncode == 0, off.stderr
    assert srv.server.cli("admin", "team", "set", team, "--cache", "key").returncode == 0
    assert ask(srv, key, "chat", "fake/chat", prompt).cache == "miss"  # the CLI's purge reached the store
    _until_hit(srv, key, prompt)
    purged = srv.server.cli("admin", "team", "purge-cache", team, "--json")
    assert purged.returncode == 0 and json.loads(purged.stdout)["entries_purged"] == 1, purged.stdout
    assert srv.server.cli("admin", "team", "set", team, "--cache", "sometimes").returncode != 0
