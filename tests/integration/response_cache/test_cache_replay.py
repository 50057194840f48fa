"""Replay through a real `serve` (SQLite, and PostgreSQL with Redis): every client protocol over every
upstream kind, stored from a stream and served to a body request and back, as the protocol's events in
order with fresh ids; two teams never share an entry, `key` mode never shares across keys."""

from __future__ import annotations

import secrets
import time

import httpx
import pytest

from tests.integration.response_cache.asking import PROTOCOLS, UPSTREAMS, Got, ask
from tests.integration.response_cache.conftest import Cached
from tests.support.fake_upstream import Reply

# The events of a replayed stream, in order: the protocol's first and last, and text deltas between.
FIRST_LAST = {
    "chat": ("chunk", "chunk"),
    "responses": ("response.created", "response.completed"),
    "messages": ("message_start", "message_stop"),
}
LONG = "The quick brown fox jumps over the lazy dog while the cache keeps its answer. " * 3


def _prompt() -> str:
    return "question " + secrets.token_hex(6)


def _hit_soon(srv: Cached, key: str, protocol: str, model: str, prompt: str, *, stream: bool) -> Got:
    """The next ask, retried briefly while the first answer is still being stored (in the background)."""
    deadline = time.monotonic() + 5
    while True:
        got = ask(srv, key, protocol, model, prompt, stream=stream)
        if got.cache == "hit" or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


@pytest.mark.parametrize("first_stream", [True, False], ids=["stored-from-stream", "stored-from-body"])
@pytest.mark.parametrize("model", UPSTREAMS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_replay_across_stream_and_body(srv: Cached, protocol: str, model: str, first_stream: bool) -> None:
    _, key = srv.team()
    prompt = _prompt()
    srv.upstream.push(Reply.text(LONG))
    first = ask(srv, key, protocol, model, prompt, stream=first_stream)
    assert first.cache == "miss" and first.text == LONG
    calls = srv.upstream.call_count()
    second = _hit_soon(srv, key, protocol, model, prompt, stream=not first_stream)
    assert second.cache == "hit", second.headers
    assert second.text == LONG
    assert srv.upstream.call_count() == calls  # answered from the cache
    assert second.id and second.id != first.id  # a fresh id
    assert int(second.headers["age"]) >= 0
    if not first_stream:  # the hit streamed: the protocol's events, in order, the text in several deltas
        begin, end = FIRST_LAST[protocol]
        assert second.events[0] == begin and second.events[-1] == end, second.events
        assert len(second.events) >= 6, second.events
    # And the same request streamed as the first was: a hit too.
    again = ask(srv, key, protocol, model, prompt, stream=first_stream)
    assert again.cache == "hit" and again.text == LONG


def test_equal_json_in_another_order_hits_and_one_character_misses(srv: Cached) -> None:
    _, key = srv.team()
    prompt = _prompt()
    auth = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    url = srv.server.text_url + "/v1/chat/completions"
    one = '{"model": "fake/chat", "temperature": 0.5, "messages": [{"role": "user", "content": "PROMPT"}]}'
    other = '{ "messages":[ {"content":"PROMPT","role":"user"} ],"temperature":0.5,"model":"fake/chat" }'
    one, other = one.replace("PROMPT", prompt), other.replace("PROMPT", prompt)
    assert httpx.post(url, content=one, headers=auth, timeout=30).headers["x-modelport-cache"] == "miss"
    deadline = time.monotonic() + 5
    while (r := httpx.post(url, content=other, headers=auth, timeout=30)).headers["x-modelport-cache"] != "hit":
        assert time.monotonic() < deadline, r.headers
        time.sleep(0.1)
    changed = other.replace('"temperature":0.5', '"temperature":0.6')
    assert httpx.post(url, content=changed, headers=auth, timeout=30).headers["x-modelport-cache"] == "miss"
    system = one.replace('"messages": [', '"messages": [{"role": "system", "content": "be brief"}, ')
    assert httpx.post(url, content=system, headers=auth, timeout=30).headers["x-modelport-cache"] == "miss"


def test_two_teams_never_share(srv: Cached) -> None:
    _, first = srv.team()
    _, second = srv.team()
    prompt = _prompt()
    srv.upstream.push(Reply.text("for the first team"), Reply.text("for the second team"))
    assert ask(srv, first, "chat", "fake/chat", prompt).cache == "miss"
    assert _hit_soon(srv, first, "chat", "fake/chat", prompt, stream=False).cache == "hit"
    other = ask(srv, second, "chat", "fake/chat", prompt)
    assert other.cache == "miss" and other.text == "for the second team"


def test_key_mode_never_shares_across_keys(srv: Cached) -> None:
    team, first = srv.team("key")
    second = srv.key(team)
    prompt = _prompt()
    srv.upstream.push(Reply.text("for the first key"), Reply.text("for the second key"))
    assert ask(srv, first, "messages", "fake/claude", prompt).cache == "miss"
    assert _hit_soon(srv, first, "messages", "fake/claude", prompt, stream=False).cache == "hit"
    other = ask(srv, second, "messages", "fake/claude", prompt)
    assert other.cache == "miss" and other.text == "for the second key"
    # In `team` mode the team's keys share.
    team, first = srv.team("team")
    second = srv.key(team)
    assert ask(srv, first, "messages", "fake/claude", prompt).cache == "miss"
    assert _hit_soon(srv, second, "messages", "fake/claude", prompt, stream=False).cache == "hit"


def test_no_header_when_the_team_cache_is_off(srv: Cached) -> None:
    _, key = srv.team("off")
    prompt = _prompt()
    assert ask(srv, key, "chat", "fake/chat", prompt).cache is None
    assert ask(srv, key, "chat", "fake/chat", prompt).cache is None
    assert srv.upstream.call_count() == 2


@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
def test_a_responses_hit_is_kept_for_previous_response_id(srv: Cached, stream: bool) -> None:
    _, key = srv.team()
    prompt = _prompt()
    srv.upstream.push(Reply.text("kept answer"))
    assert ask(srv, key, "responses", "fake/claude", prompt).cache == "miss"
    hit = _hit_soon(srv, key, "responses", "fake/claude", prompt, stream=stream)
    assert hit.cache == "hit"
    client = srv.openai(key)
    assert client.responses.retrieve(hit.id).output_text == "kept answer"
    srv.upstream.push(Reply.text("next turn"))
    follow = client.responses.create(model="fake/claude", input="and then?", previous_response_id=hit.id)
    assert follow.output_text == "next turn"
    sent = srv.upstream.last_request
    assert sent is not None and "kept answer" in sent.body.decode()
